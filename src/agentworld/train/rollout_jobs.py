"""Rollout episodes as jobs: what to run, a fingerprint of it, and a journal of the finished ones.

Why jobs: the in-process rollout and the Ray one (:mod:`agentworld.train.rollout_ray`) must run the
*same* episodes with the same seeds, and a resumed run must know which episodes it already has. A
job is a picklable coroutine factory (a :func:`functools.partial` of a module-level function with
the episode's spec, seed, task and turn limit bound) plus a key and a fingerprint of those settings.

Why a journal: ``OUT`` and its RL exports are written once, atomically, in episode order, when the
run ends; until then each finished episode is appended to ``OUT.journal.jsonl`` as soon as it is
back (in whatever order episodes finish), flushed and fsynced. A killed run restarted with
``--resume`` keeps those episodes and runs only the others; a journal row written under other
settings (another seed, spec, task, turn limit or model) is refused rather than mixed in.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld.errors import AgentWorldError, DataError
from agentworld.io import JsonlJournal, dumps, read_journal
from agentworld.models.base import ChatBackend
from agentworld.sim.curriculum import Curriculum
from agentworld.sim.types import WorldSpec
from agentworld.train.rollout import Episode, arun_episode

__all__ = ["EpisodeJob", "EpisodeRun", "RolloutJournal", "curriculum_jobs", "fingerprint", "journal_path",
           "run_jobs_local"]

EpisodeRun = Callable[[ChatBackend, ChatBackend | None], Coroutine[Any, Any, Episode]]
"""Runs one episode given the agent and the world model (both built where the episode runs)."""


@dataclass(frozen=True)
class EpisodeJob:
    """One episode to run: ``key`` names it in the journal, ``fingerprint`` hashes its settings."""

    key: str
    fingerprint: str
    run: EpisodeRun


def fingerprint(settings: dict[str, Any]) -> str:
    """A short stable hash of an episode's settings (JSON with sorted keys)."""
    return hashlib.sha256(dumps(_sorted(settings)).encode()).hexdigest()[:16]


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list | tuple):
        return [_sorted(v) for v in value]
    return value


def curriculum_jobs(spec: WorldSpec, curriculum: Curriculum, episodes: int, max_turns: int, *, task: str = "",
                    seed: int = 0, agent_model: str = "", world_model: str = "") -> list[EpisodeJob]:
    """The jobs of :func:`~agentworld.train.rollout.run_rollouts` (episode ``i``: seed ``seed + i``)."""
    jobs = []
    for i in range(episodes):
        episode_spec = curriculum.spec_for(spec, i, episodes)
        rate = curriculum.rate(i, episodes)
        settings = {"spec": episode_spec.model_dump(mode="json"), "index": i, "seed": seed + i,
                    "fault_rate": rate, "max_turns": max_turns, "task": task, "agent_model": agent_model,
                    "world_model": world_model}
        run = functools.partial(arun_episode, spec=episode_spec, index=i, seed=seed + i, fault_rate=rate,
                                max_turns=max_turns, task=task, agent_model=agent_model)
        jobs.append(EpisodeJob(key=str(i), fingerprint=fingerprint(settings), run=run))
    return jobs


def run_jobs_local(jobs: Sequence[EpisodeJob], agent: ChatBackend, world_model: ChatBackend | None,
                   on_result: Callable[[EpisodeJob, Episode], None] | None = None) -> Iterator[Episode]:
    """Run the jobs one after the other in this process; yield the episodes in order."""
    for job in jobs:
        episode = asyncio.run(job.run(agent, world_model))
        if on_result is not None:
            on_result(job, episode)
        yield episode


def journal_path(out: Path) -> Path:
    """``OUT.journal.jsonl``: the finished episodes of a run that has not written ``OUT`` yet."""
    return out.with_suffix(".journal.jsonl")


class RolloutJournal:
    """The journal of one rollout run: finished episodes by key, and appends of new ones.

    Raises (from :meth:`open`):
        AgentWorldError: a journal of an interrupted run exists and ``resume`` is off, or ``resume`` is on
            and the run is finished (no journal, ``out`` written): a rerun would replace it.
        DataError: a journal row is not an episode of this run (unknown key, other settings).
    """

    def __init__(self, path: Path, done: dict[str, Episode]) -> None:
        self.path = path
        self.done = done
        self._journal: JsonlJournal | None = None

    @classmethod
    def open(cls, out: Path, jobs: Sequence[EpisodeJob], *, resume: bool) -> RolloutJournal:
        path = journal_path(out)
        rows = list(read_journal(path))
        if rows and not resume:
            raise AgentWorldError(f"{path} holds {len(rows)} finished episode(s) of an interrupted run: pass "
                                  "--resume to continue it, or delete it to start over")
        if resume and not rows and out.is_file() and out.stat().st_size:
            raise AgentWorldError(f"{out} is a finished rollout (no journal of an interrupted run beside "
                                  "it): nothing to resume; give another --out, or remove it to run again")
        by_key = {job.key: job for job in jobs}
        done: dict[str, Episode] = {}
        for line, row in enumerate(rows, 1):
            key = row.get("key") if isinstance(row, dict) else None
            job = by_key.get(str(key))
            if job is None:
                raise DataError(f"episode {key!r} is not one of this run's episodes: resume with the options "
                                "the run was started with, or use another --out", path=str(path), line=line)
            if row.get("fingerprint") != job.fingerprint:
                raise DataError(f"episode {key!r} was run with other settings (spec, seed, task, turns or "
                                "models): resume with the options the run was started with, or use another "
                                "--out", path=str(path), line=line)
            try:
                done[job.key] = Episode.model_validate(row.get("episode"))
            except ValueError as exc:
                raise DataError(f"not a rollout episode: {exc}", path=str(path), line=line,
                                sample_id=job.key) from None
        return cls(path, done)

    def pending(self, jobs: Sequence[EpisodeJob]) -> list[EpisodeJob]:
        """The jobs not finished yet, in order."""
        return [job for job in jobs if job.key not in self.done]

    def record(self, job: EpisodeJob, episode: Episode) -> None:
        """Append a finished episode (flushed and fsynced before this returns)."""
        if self._journal is None:
            self._journal = JsonlJournal(self.path)
        self._journal.append({"key": job.key, "fingerprint": job.fingerprint,
                              "episode": episode.model_dump(mode="json")})
        self.done[job.key] = episode

    def ordered(self, jobs: Sequence[EpisodeJob]) -> list[Episode]:
        """Every job's episode, in job order (all must be done)."""
        return [self.done[job.key] for job in jobs]

    def close(self) -> None:
        """Stop appending; the file stays until the run's outputs are written (see :func:`journal_path`)."""
        if self._journal is not None:
            self._journal.close()
            self._journal = None

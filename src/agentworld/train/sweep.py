"""Perturbation sweeps: the same rollouts once per control spec of a world, results side by side.

Why: a synthesized world trains robustness only if one knows how the agent fares under each kind of
perturbation. A world folder's ``controls/*.yaml`` (:class:`ControlSpec` files: intermittent
failures, pagination, partial data, stale data — the simulator's own seeded fault controls) name
its perturbations; the sweep runs the clean world and then each spec with the *same* episode seeds
and tasks, so the differences between rows come from the controls alone.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentworld.domains.spec import ControlSpec, WorldSpec
from agentworld.errors import DataError
from agentworld.models.base import ChatBackend
from agentworld.sim.types import SessionState
from agentworld.synth.world import Task, World, evaluate, final_state, load_world
from agentworld.train.rollout import Episode, arun_episode
from agentworld.train.rollout_jobs import EpisodeJob, fingerprint, run_jobs_local

__all__ = ["CLEAN", "SweepResult", "SweepTask", "load_world_tasks", "summarize", "sweep_controls",
           "sweep_jobs", "with_controls", "world_tasks"]

CLEAN = "clean"
"""The row without a control spec (the world's own controls only)."""
_FENCED = re.compile(r"```json\n(.*)\n```", re.S)
_FAILED = frozenset({"fault", "template"})

TaskCheck = Callable[[SessionState], tuple[bool, list[str]]]
"""Whether a finished episode met its task's success condition, with the reasons it did not."""


@dataclass(frozen=True)
class SweepTask:
    """One task of the sweep: the agent's instruction and, when the world has one, its success check."""

    id: str
    instruction: str
    check: TaskCheck | None = None


class SweepResult(BaseModel):
    """One row of a sweep: how the episodes under one control spec went."""

    model_config = ConfigDict(frozen=True)

    controls: str
    """``clean`` or the control file's stem."""
    episodes: int
    success_rate: float | None
    """Fraction of episodes whose task success condition held; ``None`` when no task has one."""
    mean_reward: float
    mean_turns: float
    done_rate: float
    """Fraction of episodes the agent ended itself (said DONE) before the turn limit."""
    faults: dict[str, int] = Field(default_factory=dict)
    """Injected faults by kind, over all episodes."""
    fault_turns: int = 0
    """Turns that carried an injected fault."""
    faults_without_effect: dict[str, int] = Field(default_factory=dict)
    """Faults drawn on a call where they would have changed nothing (one page, a fresh stale read), by
    kind: not injected, so not in ``faults``."""
    fault_notes: dict[str, int] = Field(default_factory=dict)
    """Episodes per note, e.g. ``stale: no tool this fault applies to was called (get_booking)``: that
    fault could not fire in them, so its 0 says nothing about the agent."""


def _calls(state: SessionState) -> list[tuple[str, dict[str, Any], str]]:
    """``(tool, arguments, observation)`` of each MCP call of an episode that went through.

    A call answered by an error the framework made (an injected fault, an invalid-arguments error:
    sources ``fault`` and ``template``) did not happen, so it neither changes the state nor counts as
    made in the trace.
    """
    calls = []
    for record in state.history:
        if record.source in _FAILED:
            continue
        match = _FENCED.search(record.action)
        try:
            payload = json.loads(match.group(1)) if match else None
        except ValueError:
            payload = None
        if isinstance(payload, dict) and isinstance(payload.get("tool_name"), str):
            args = payload.get("arguments")
            calls.append((payload["tool_name"], args if isinstance(args, dict) else {}, record.observation))
    return calls


def world_tasks(world: World) -> list[SweepTask]:
    """The world's tasks, each checked by its success rules over the episode's simulated calls.

    The final state is the world's initial entities updated by what the simulated results showed
    (:func:`agentworld.synth.world.final_state`); the trace is every call that went through (a call an
    injected fault failed was not made).
    """
    def check(task: Task) -> TaskCheck:
        def run(state: SessionState) -> tuple[bool, list[str]]:
            calls = _calls(state)
            verdict = evaluate(task, final_state(world, calls),
                               [{"tool": tool, "arguments": args} for tool, args, _ in calls])
            return verdict.passed, list(verdict.reasons)
        return run

    return [SweepTask(id=task.id, instruction=task.instruction, check=check(task)) for task in world.tasks]


def load_world_tasks(world_dir: str | Path) -> tuple[World, WorldSpec, list[SweepTask]]:
    """A world folder for rollouts: the world, its spec (its tools and initial entities) and its tasks.

    Raises:
        DataError: the folder does not load, or has a control spec named ``clean``.
    """
    world = load_world(world_dir)
    if CLEAN in world.controls:
        raise DataError(f"'{CLEAN}' names the row without controls; rename this control spec",
                        path=str(Path(world_dir) / "controls" / f"{CLEAN}.yaml"))
    return world, world.to_spec(), world_tasks(world)


def with_controls(spec: WorldSpec, controls: ControlSpec) -> WorldSpec:
    """``spec`` with ``controls``' fault rules and facts added after its own (its seed, when set, wins)."""
    merged = spec.controls.model_copy(update={
        "faults": [*spec.controls.faults, *controls.faults], "facts": [*spec.controls.facts, *controls.facts],
        "seed": controls.seed if controls.seed is not None else spec.controls.seed})
    return spec.model_copy(update={"controls": merged})


def summarize(name: str, episodes: Sequence[Episode]) -> SweepResult:
    """The sweep row of ``episodes`` (their trajectories' ``success`` meta, rewards, turns and faults)."""
    n = len(episodes)
    checked = [e.trajectory.meta["success"] for e in episodes if e.trajectory.meta.get("success") is not None]
    faults = Counter(str(t.meta["fault"]) for e in episodes for t in e.trajectory.turns
                     if t.meta.get("fault"))
    idle = Counter(str(t.meta["fault_without_effect"]) for e in episodes for t in e.trajectory.turns
                   if t.meta.get("fault_without_effect"))
    notes = Counter(note for e in episodes for note in e.trajectory.meta.get("fault_notes", []))
    return SweepResult(
        controls=name, episodes=n,
        success_rate=sum(bool(s) for s in checked) / len(checked) if checked else None,
        mean_reward=sum(e.reward for e in episodes) / n if n else 0.0,
        mean_turns=sum(len(e.trajectory.turns) for e in episodes) / n if n else 0.0,
        done_rate=sum(e.done for e in episodes) / n if n else 0.0,
        faults=dict(sorted(faults.items())), fault_turns=sum(faults.values()),
        faults_without_effect=dict(sorted(idle.items())), fault_notes=dict(sorted(notes.items())))


async def _episode(agent: ChatBackend, world_model: ChatBackend | None, spec: WorldSpec, task: SweepTask,
                   name: str, index: int, seed: int, max_turns: int,
                   agent_options: dict[str, Any]) -> Episode:
    verdict: list[tuple[bool, list[str]]] = []

    def reward(state: SessionState) -> float:
        if task.check is None:
            return 0.0
        verdict.append(task.check(state))
        return 1.0 if verdict[-1][0] else 0.0

    episode = await arun_episode(agent, world_model, spec, index=index, seed=seed, fault_rate=0.0,
                                 max_turns=max_turns, task=task.instruction, task_reward=reward,
                                 **agent_options)
    success, reasons = verdict[-1] if verdict else (None, [])
    meta = {**episode.trajectory.meta, "controls": name, "task_id": task.id, "success": success,
            "failed_conditions": reasons}
    trajectory = episode.trajectory.model_copy(update={"id": f"rollout-{name}-{index}", "meta": meta})
    return episode.model_copy(update={"trajectory": trajectory})


def sweep_jobs(spec: WorldSpec, controls: Sequence[tuple[str, ControlSpec]], tasks: Sequence[SweepTask],
               episodes: int, max_turns: int, *, seed: int = 0, clean: bool = True, agent_model: str = "",
               world_model: str = "", **agent_options: Any) -> list[tuple[str, list[EpisodeJob]]]:
    """The episodes of :func:`sweep_controls` as jobs (key ``<controls>/<i>``), one list per control spec.

    Episode ``i`` of every row has seed ``seed + i`` and task ``tasks[i % len(tasks)]``, so rows differ
    only by their controls.
    """
    if not tasks:
        raise DataError("a sweep needs at least one task")
    rows = [(CLEAN, ControlSpec())] if clean else []
    options = {**agent_options, "agent_model": agent_model}
    out = []
    for name, control in [*rows, *controls]:
        row_spec = with_controls(spec, control)
        jobs = []
        for i in range(episodes):
            task = tasks[i % len(tasks)]
            settings = {"spec": row_spec.model_dump(mode="json"), "controls": name, "task_id": task.id,
                        "task": task.instruction, "index": i, "seed": seed + i, "max_turns": max_turns,
                        "world_model": world_model, **options}
            run = functools.partial(_episode, spec=row_spec, task=task, name=name, index=i, seed=seed + i,
                                    max_turns=max_turns, agent_options=options)
            jobs.append(EpisodeJob(key=f"{name}/{i}", fingerprint=fingerprint(settings), run=run))
        out.append((name, jobs))
    return out


def sweep_controls(agent: ChatBackend, world_model: ChatBackend | None, spec: WorldSpec,
                   controls: Sequence[tuple[str, ControlSpec]], tasks: Sequence[SweepTask], episodes: int,
                   max_turns: int, *, seed: int = 0, clean: bool = True,
                   **agent_options: Any) -> list[tuple[SweepResult, list[Episode]]]:
    """Run ``episodes`` rollouts on the clean world (``clean``) and once more under each control spec.

    Episode ``i`` of every row has seed ``seed + i`` and task ``tasks[i % len(tasks)]``, so rows differ
    only by their controls. ``agent_options``: ``agent_model``, ``agent_temperature``, ``agent_max_tokens``.

    Returns:
        One ``(row, episodes)`` pair per control spec, the clean row first.
    """
    rows = sweep_jobs(spec, controls, tasks, episodes, max_turns, seed=seed, clean=clean, **agent_options)
    return [(summarize(name, done), done)
            for name, jobs in rows
            for done in [list(run_jobs_local(jobs, agent, world_model))]]

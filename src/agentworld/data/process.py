"""Processing steps: small functions over iterators, each tallying what it did in a :class:`StepCounter`.

Trajectory steps (:func:`skip_retry_cycles`, :func:`drop_no_change`) clean whole trajectories
before :func:`expand` turns each into turn-level :class:`TrainSample` records; sample steps
(:func:`dedup`, :func:`split_by_source`, and :func:`agentworld.data.masking.mask`) follow. Every
step keeps one trajectory (or sample) in memory at a time.

The steps take pydantic records or the pipeline's plain ones (:mod:`agentworld.data.records`,
the same attributes) and give back the kind they got; :func:`expand_plain` is :func:`expand`
making plain samples.

Sample ``meta`` is the turn's ``meta`` (``row``: the AgentWorldBench row details kept by ingest;
``context_before`` etc.) plus ``trajectory``: the trajectory's ``meta`` without ``source`` (which
is a field of its own). :func:`samples_to_bench_rows` turns samples back into bench rows.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from functools import cache
from typing import Any, TypeVar

import orjson

from agentworld.data.dataset_stats import HIST_EDGES, DatasetStats, DatasetTally, Histogram
from agentworld.data.records import PlainSample, PlainTrajectory, PlainTurn, replaced
from agentworld.data.tokens import normalise_action
from agentworld.data.types import StepStats, TrainSample
from agentworld.domains.base import plugins
from agentworld.domains.failures import error_patterns, is_error, observation_body
from agentworld.schema import Trajectory, Turn, split_trajectory

Traj = TypeVar("Traj", Trajectory, PlainTrajectory)
Sample = TypeVar("Sample", TrainSample, PlainSample)
AnyTrajectory = Trajectory | PlainTrajectory
AnySample = TrainSample | PlainSample


class StepCounter:
    """Mutable tally of one step, filled while its iterator is consumed; :meth:`stats` freezes it."""

    def __init__(self, step: str) -> None:
        self.step = step
        self.inputs = 0
        self.outputs = 0
        self.dropped = 0
        self.details: Counter[str] = Counter()

    def stats(self) -> StepStats:
        return StepStats(step=self.step, inputs=self.inputs, outputs=self.outputs, dropped=self.dropped,
                         details=dict(self.details))


def _tally(stats: StepCounter | None, step: str) -> StepCounter:
    return stats if stats is not None else StepCounter(step)


def stable_unit(*parts: object) -> float:
    """A uniform number in [0, 1) from ``parts``: the same on every machine and run (not ``hash``)."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def stable_units(*first: object) -> Callable[[str], float]:
    """``lambda last: stable_unit(*first, last)``, with the leading parts encoded once (for a stream)."""
    head = "\x1f".join(map(str, (*first, ""))).encode()
    blake2b, from_bytes = hashlib.blake2b, int.from_bytes

    def unit(last: str) -> float:
        return from_bytes(blake2b(head + last.encode(), digest_size=8).digest(), "big") / 2**64
    return unit


def _with_turns(traj: Traj, turns: list[Any], step: str, removed: int) -> Traj:
    """``traj`` with ``turns`` kept; saved row ids/lengths are dropped so they are renumbered on export."""
    if not removed:
        return traj
    renumbered = []
    for turn in turns:
        row = turn.meta.get("row")
        if isinstance(row, dict):
            row = {k: v for k, v in row.items() if k not in ("id", "total_turns")}
            turn = replaced(turn, meta={**turn.meta, "row": row})
        renumbered.append(turn)
    cleaned = {**traj.meta.get("cleaned", {}), step: removed}
    return replaced(traj, turns=tuple(renumbered), meta={**traj.meta, "cleaned": cleaned})


def skip_retry_cycles(trajs: Iterable[Traj], stats: StepCounter | None = None) -> Iterator[Traj]:
    """Drop failed attempts that the agent simply repeated, keeping the last attempt.

    Rule: turn *i* is dropped when its observation is an error (:func:`failures.is_error` for the
    trajectory's domain) and turn *i+1* sends the same normalised action
    (:func:`tokens.normalise_action`). A run ``A(err) A(err) A(ok)`` keeps only the last ``A``;
    so does ``A(err) A(err)`` (the last attempt is what the trajectory continued from).

    Why state continuity holds: an error observation means the command did not change the
    environment, so the state before turn *i+1* is the state before turn *i*. Limits: a command
    that failed *after* a side effect (wrote half a file, then errored) loses that effect from the
    history; retries with an edited action (a fixed typo) are not cycles and are kept.
    """
    tally = _tally(stats, "skip_retry_cycles")
    patterns = cache(error_patterns)  # the registry's domains do not change during a step
    for traj in trajs:
        tally.inputs += 1
        turns: Sequence[Turn | PlainTurn] = traj.turns
        retried = _retried(turns, traj.domain, patterns(traj.domain))
        kept = [t for t, failed in zip(turns, retried, strict=True) if not failed]
        removed = len(turns) - len(kept)
        tally.details["turns_in"] += len(turns)
        tally.details["turns_dropped"] += removed
        tally.details["trajectories_changed"] += bool(removed)
        tally.outputs += 1
        yield _with_turns(traj, kept, "retry_cycles", removed)


def _retried(turns: Sequence[Any], domain: str, patterns: tuple[str, ...]) -> list[bool]:
    """Whether each turn is an error that the next turn sends again.

    The error test comes first and actions are normalised only when it holds: errors are rare,
    and :func:`failures.is_error` remembers its answers for the masking step, which asks again.
    """
    keys: dict[int, str] = {}

    def key(i: int) -> str:
        if i not in keys:
            keys[i] = normalise_action(turns[i].action)
        return keys[i]

    return [i + 1 < len(turns) and is_error(turn.observation, domain, patterns) and key(i) == key(i + 1)
            for i, turn in enumerate(turns)]


def gui_domains() -> frozenset[str]:
    """The domains whose plugin says their observations are screens of a graphical UI (``gui``)."""
    return frozenset(name for name, found in plugins().items() if found.gui)


def drop_no_change(trajs: Iterable[Traj], stats: StepCounter | None = None,
                   domains: Collection[str] | None = None) -> Iterator[Traj]:
    """In GUI domains (``domains``; default :func:`gui_domains`), drop turns whose observation equals
    the previous one (a latency artefact).

    A screen that did not change after an action usually means the UI had not caught up, not
    that the action does nothing; training on it teaches the model to predict "nothing happens".
    Observations are compared without the observation header and surrounding whitespace. The
    first turn is always kept; other domains pass through untouched (an unchanged terminal
    screen is real information there).
    """
    tally = _tally(stats, "drop_no_change")
    domains = gui_domains() if domains is None else domains
    for traj in trajs:
        tally.inputs += 1
        tally.outputs += 1
        if traj.domain not in domains:
            yield traj
            continue
        kept: list[Any] = []
        previous: str | None = None
        for turn in traj.turns:
            body = observation_body(turn.observation).strip()
            if body != previous:
                kept.append(turn)
            previous = body
        removed = len(traj.turns) - len(kept)
        tally.details["turns_dropped"] += removed
        yield _with_turns(traj, kept, "no_change", removed)


def expand(trajs: Iterable[AnyTrajectory], stats: StepCounter | None = None) -> Iterator[TrainSample]:
    """One :class:`TrainSample` per turn: predict its observation from system, earlier turns, action."""
    for sample in expand_plain(trajs, stats):
        yield sample.to_model()


def expand_plain(trajs: Iterable[AnyTrajectory], stats: StepCounter | None = None) -> Iterator[PlainSample]:
    """:func:`expand` making :class:`~agentworld.data.records.PlainSample` records (the pipeline's)."""
    tally = _tally(stats, "expand")
    for traj in trajs:
        tally.inputs += 1
        turns: Sequence[Turn | PlainTurn] = traj.turns
        pairs = [(t.action, t.observation) for t in turns]
        source = str(traj.meta.get("source", ""))
        traj_meta = {k: v for k, v in traj.meta.items() if k != "source"}
        if not pairs:
            tally.details["empty_trajectories"] += 1
        tid, domain, task, system = traj.id, traj.domain, traj.task, traj.system_prompt
        for i, turn in enumerate(turns, start=1):
            meta = {**turn.meta, "trajectory": traj_meta} if traj_meta else dict(turn.meta)
            tally.outputs += 1
            yield PlainSample(f"{tid}-t{i}", tid, i, domain, task, source, system, pairs, meta)


class DedupKeys:
    """The key :func:`dedup` uses: blake2b-128 of ``orjson.dumps([system, history, action, observation])``.

    Hashed incrementally: the samples of one trajectory come in order, each history extending the
    previous one, so the hash state after ``[system,[pair_1,...,pair_k`` is kept and extended, and
    each sample only adds its own action and observation (linear, not quadratic, in the trajectory
    length). A history that does not extend the kept prefix starts afresh; the bytes hashed are the
    same either way. A plain sample's history is known to extend the kept one by its trajectory's
    shared ``pairs`` list alone, without comparing the pairs (:mod:`agentworld.data.records`).
    The state after the system prompt is kept too: trajectories of one source mostly share it, and
    hashing a long prompt anew would cost more than the rest of a short trajectory.
    """

    def __init__(self) -> None:
        self._system: str | None = None
        self._system_state: tuple[str, Any] | None = None
        self._prefix: list[tuple[str, str]] = []
        self._pairs: list[tuple[str, str]] | None = None
        """The plain samples' trajectory whose first ``len(self._prefix)`` pairs are hashed (else None)."""
        self._state = hashlib.blake2b(digest_size=16)
        self._last: tuple[str, str, bytes] | None = None
        """The last sample's action, observation and their JSON: usually the next history's newest pair."""

    def __call__(self, sample: AnySample) -> bytes:
        if type(sample) is PlainSample:
            pairs, n = sample.pairs, sample.turn - 1
            if pairs is not self._pairs or n < len(self._prefix):
                self._restart(sample.system)
                self._pairs = pairs
            self._extend(pairs, n)
        else:
            history, n = sample.history, len(self._prefix)
            if self._pairs is not None or sample.system != self._system or len(history) < n \
                    or history[:n] != self._prefix:
                self._restart(sample.system)
            self._extend(history, len(history))
        state = self._state.copy()
        state.update(b"]," + self._pair_json(sample.action, sample.observation) + b"]")
        return state.digest()

    def _restart(self, system: str) -> None:
        self._system, self._prefix, self._pairs = system, [], None
        kept = self._system_state
        if kept is None or kept[0] != system:
            kept = self._system_state = (system, hashlib.blake2b(b"[" + orjson.dumps(system) + b",[",
                                                                 digest_size=16))
        self._state = kept[1].copy()

    def _extend(self, history: Sequence[tuple[str, str]], n: int) -> None:
        """Hash ``history[len(prefix):n]`` onto the kept prefix."""
        prefix, update = self._prefix, self._state.update
        for pair in history[len(prefix):n]:
            update(b",[" + self._pair_json(*pair) + b"]" if prefix else b"[" + self._pair_json(*pair) + b"]")
            prefix.append(pair)

    def _pair_json(self, action: str, observation: str) -> bytes:
        """``"action","observation"`` as JSON (``orjson.dumps`` of the pair without its brackets)."""
        last = self._last
        if last is not None and last[0] == action and last[1] == observation:
            return last[2]
        encoded = orjson.dumps(action) + b"," + orjson.dumps(observation)
        self._last = (action, observation, encoded)
        return encoded


def dedup(samples: Iterable[Sample], stats: StepCounter | None = None) -> Iterator[Sample]:
    """Drop samples whose system, history, action and observation were all seen before.

    Memory: one 16-byte digest per distinct sample (not the samples themselves).
    """
    tally = _tally(stats, "dedup")
    seen: set[bytes] = set()
    key_of = DedupKeys()
    for sample in samples:
        tally.inputs += 1
        key = key_of(sample)
        if key in seen:
            tally.dropped += 1
            continue
        seen.add(key)
        tally.outputs += 1
        yield sample


def _split_key(sample: AnySample, key: str) -> str:
    if key.startswith("meta."):
        return str(sample.meta.get("trajectory", {}).get(key[5:], ""))
    return str(getattr(sample, key))


def split_by_source(samples: Iterable[Sample], eval_fraction: float = 0.1, seed: int = 0,
                    stats: StepCounter | None = None, key: str = "source") -> Iterator[Sample]:
    """Mark each sample ``train`` or ``eval``; everything of one source lands on the same side.

    A source goes to eval when ``stable_unit(seed, source) < eval_fraction``, so the split needs no
    pass over the data, is the same on every run and machine, and never leaks turns of one file
    (or recorder run) into both sides. ``key`` may name another field to group by
    (``trajectory_id``, ``task``, ``domain``) or ``meta.<name>`` of the trajectory meta.
    """
    tally = _tally(stats, "split")
    group: str | None = None  # consecutive samples mostly share the key: hash it once per run
    side = "train"
    for sample in samples:
        tally.inputs += 1
        value = _split_key(sample, key)
        if value != group:
            group, side = value, "eval" if stable_unit(seed, value) < eval_fraction else "train"
        tally.details[side] += 1
        tally.outputs += 1
        if isinstance(sample, PlainSample):  # the stream's own record: set in place
            sample.split = side
            yield sample
        else:
            yield sample.model_copy(update={"split": side})


def samples_to_bench_rows(samples: Iterable[AnySample]) -> Iterator[dict[str, Any]]:
    """AgentWorldBench rows of samples (consecutive samples of a trajectory form one group).

    Ingested bench rows come back exactly (ids, key order, unknown fields: ``meta["row"]``).
    Each row carries the trajectory's action/observation lists, rebuilt from the group's histories;
    turns after the group's last sample are unknown and so absent from the lists.
    """
    for group in _trajectory_groups(samples):
        pairs: dict[int, tuple[str, str]] = {}
        for sample in group:
            pairs.update((i, p) for i, p in enumerate(sample.history, start=1) if i not in pairs)
            pairs[sample.turn] = (sample.action, sample.observation)
        metas = {s.turn: s.meta for s in group}
        n = max(pairs)
        turns = tuple(Turn(action=pairs.get(i, ("", ""))[0], observation=pairs.get(i, ("", ""))[1],
                           meta=_row_meta(metas.get(i, {}))) for i in range(1, n + 1))
        first = group[0]
        traj = Trajectory(id=first.trajectory_id, domain=first.domain, task=first.task,
                          system_prompt=first.system, turns=turns)
        rows = split_trajectory(traj)
        for sample in group:
            row = rows[sample.turn - 1].to_row()
            saved = sample.meta.get("row")
            if not isinstance(saved, dict):  # no remembered row: the sample's own id and length are the truth
                row.update(id=sample.id, total_turns=sample.total_turns)
            elif "total_turns" not in saved and "total_turns" in row:
                row["total_turns"] = sample.total_turns
            yield row


def _trajectory_groups(samples: Iterable[AnySample]) -> Iterator[list[AnySample]]:
    """Runs of samples of one trajectory; a repeated turn number starts a new run (a duplicate)."""
    group: list[AnySample] = []
    turns: set[int] = set()
    for sample in samples:
        if group and (sample.trajectory_id != group[-1].trajectory_id or sample.turn in turns):
            yield group
            group, turns = [], set()
        group.append(sample)
        turns.add(sample.turn)
    if group:
        yield group


def _row_meta(meta: dict[str, Any]) -> dict[str, Any]:
    return {"row": meta["row"]} if isinstance(meta.get("row"), dict) else {}


__all__ = ["HIST_EDGES", "DatasetStats", "DatasetTally", "DedupKeys", "Histogram", "StepCounter", "dedup",
           "drop_no_change", "expand", "expand_plain", "samples_to_bench_rows", "skip_retry_cycles",
           "split_by_source", "stable_unit", "stable_units"]

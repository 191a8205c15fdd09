"""Processing steps: small functions over iterators, each tallying what it did in a :class:`StepCounter`.

Trajectory steps (:func:`skip_retry_cycles`, :func:`drop_no_change`) clean whole trajectories
before :func:`expand` turns each into turn-level :class:`TrainSample` records; sample steps
(:func:`dedup`, :func:`split_by_source`, and :func:`agentworld.data.masking.mask`) follow. Every
step keeps one trajectory (or sample) in memory at a time.

Sample ``meta`` is the turn's ``meta`` (``row``: the AgentWorldBench row details kept by ingest;
``context_before`` etc.) plus ``trajectory``: the trajectory's ``meta`` without ``source`` (which
is a field of its own). :func:`samples_to_bench_rows` turns samples back into bench rows.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections import Counter
from collections.abc import Collection, Iterable, Iterator
from typing import Any

import orjson
from pydantic import BaseModel, Field

from agentworld.data.tokens import content_tokens, is_error, normalise_action, observation_body
from agentworld.data.types import MASK_CATEGORIES, StepStats, TrainSample
from agentworld.schema import Trajectory, Turn, split_trajectory

GUI_DOMAINS: tuple[str, ...] = ("android", "web", "os")


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


def _with_turns(traj: Trajectory, turns: list[Turn], step: str, removed: int) -> Trajectory:
    """``traj`` with ``turns`` kept; saved row ids/lengths are dropped so they are renumbered on export."""
    if not removed:
        return traj
    renumbered = []
    for turn in turns:
        row = turn.meta.get("row")
        if isinstance(row, dict):
            row = {k: v for k, v in row.items() if k not in ("id", "total_turns")}
            turn = turn.model_copy(update={"meta": {**turn.meta, "row": row}})
        renumbered.append(turn)
    cleaned = {**traj.meta.get("cleaned", {}), step: removed}
    return traj.model_copy(update={"turns": tuple(renumbered), "meta": {**traj.meta, "cleaned": cleaned}})


def skip_retry_cycles(trajs: Iterable[Trajectory], stats: StepCounter | None = None) -> Iterator[Trajectory]:
    """Drop failed attempts that the agent simply repeated, keeping the last attempt.

    Rule: turn *i* is dropped when its observation is an error (:func:`tokens.is_error` for the
    trajectory's domain) and turn *i+1* sends the same normalised action
    (:func:`tokens.normalise_action`). A run ``A(err) A(err) A(ok)`` keeps only the last ``A``;
    so does ``A(err) A(err)`` (the last attempt is what the trajectory continued from).

    Why state continuity holds: an error observation means the command did not change the
    environment, so the state before turn *i+1* is the state before turn *i*. Limits: a command
    that failed *after* a side effect (wrote half a file, then errored) loses that effect from the
    history; retries with an edited action (a fixed typo) are not cycles and are kept.
    """
    tally = _tally(stats, "skip_retry_cycles")
    for traj in trajs:
        tally.inputs += 1
        turns = traj.turns
        retried = _retried(turns, traj.domain)
        kept = [t for t, failed in zip(turns, retried, strict=True) if not failed]
        removed = len(turns) - len(kept)
        tally.details["turns_in"] += len(turns)
        tally.details["turns_dropped"] += removed
        tally.details["trajectories_changed"] += bool(removed)
        tally.outputs += 1
        yield _with_turns(traj, kept, "retry_cycles", removed)


def _retried(turns: tuple[Turn, ...], domain: str) -> list[bool]:
    """Whether each turn is an error that the next turn sends again.

    The error test comes first and actions are normalised only when it holds: errors are rare,
    and :func:`tokens.is_error` remembers its answers for the masking step, which asks again.
    """
    keys: dict[int, str] = {}

    def key(i: int) -> str:
        if i not in keys:
            keys[i] = normalise_action(turns[i].action)
        return keys[i]

    return [i + 1 < len(turns) and is_error(turn.observation, domain) and key(i) == key(i + 1)
            for i, turn in enumerate(turns)]


def drop_no_change(trajs: Iterable[Trajectory], stats: StepCounter | None = None,
                   domains: Collection[str] = GUI_DOMAINS) -> Iterator[Trajectory]:
    """In GUI domains, drop turns whose observation equals the previous one (a latency artefact).

    A screen that did not change after an action usually means the UI had not caught up, not
    that the action does nothing; training on it teaches the model to predict "nothing happens".
    Observations are compared without the observation header and surrounding whitespace. The
    first turn is always kept; other domains pass through untouched (an unchanged terminal
    screen is real information there).
    """
    tally = _tally(stats, "drop_no_change")
    for traj in trajs:
        tally.inputs += 1
        tally.outputs += 1
        if traj.domain not in domains:
            yield traj
            continue
        kept: list[Turn] = []
        previous: str | None = None
        for turn in traj.turns:
            body = observation_body(turn.observation).strip()
            if body != previous:
                kept.append(turn)
            previous = body
        removed = len(traj.turns) - len(kept)
        tally.details["turns_dropped"] += removed
        yield _with_turns(traj, kept, "no_change", removed)


def expand(trajs: Iterable[Trajectory], stats: StepCounter | None = None) -> Iterator[TrainSample]:
    """One :class:`TrainSample` per turn: predict its observation from system, earlier turns, action."""
    tally = _tally(stats, "expand")
    for traj in trajs:
        tally.inputs += 1
        pairs = [(t.action, t.observation) for t in traj.turns]
        source = str(traj.meta.get("source", ""))
        traj_meta = {k: v for k, v in traj.meta.items() if k != "source"}
        if not pairs:
            tally.details["empty_trajectories"] += 1
        for i, turn in enumerate(traj.turns, start=1):
            meta = {**turn.meta, "trajectory": traj_meta} if traj_meta else dict(turn.meta)
            tally.outputs += 1
            yield TrainSample(id=f"{traj.id}-t{i}", trajectory_id=traj.id, turn=i, domain=traj.domain,
                              task=traj.task, source=source, system=traj.system_prompt,
                              history=pairs[: i - 1], action=turn.action, observation=turn.observation,
                              total_turns=len(pairs), meta=meta)


class DedupKeys:
    """The key :func:`dedup` uses: blake2b-128 of ``orjson.dumps([system, history, action, observation])``.

    Hashed incrementally: the samples of one trajectory come in order, each history extending the
    previous one, so the hash state after ``[system,[pair_1,...,pair_k`` is kept and extended, and
    each sample only adds its own action and observation (linear, not quadratic, in the trajectory
    length). A history that does not extend the kept prefix starts afresh; the bytes hashed are the
    same either way.
    """

    def __init__(self) -> None:
        self._system: str | None = None
        self._prefix: list[tuple[str, str]] = []
        self._state = hashlib.blake2b(digest_size=16)
        self._last: tuple[str, str, bytes] | None = None
        """The last sample's action, observation and their JSON: usually the next history's newest pair."""

    def __call__(self, sample: TrainSample) -> bytes:
        history, n = sample.history, len(self._prefix)
        if sample.system != self._system or len(history) < n or history[:n] != self._prefix:
            self._system, self._prefix, n = sample.system, [], 0
            self._state = hashlib.blake2b(b"[" + orjson.dumps(sample.system) + b",[", digest_size=16)
        for pair in history[n:]:
            self._state.update(b",[" + self._pair_json(*pair) + b"]" if self._prefix
                               else b"[" + self._pair_json(*pair) + b"]")
            self._prefix.append(pair)
        state = self._state.copy()
        state.update(b"]," + self._pair_json(sample.action, sample.observation) + b"]")
        return state.digest()

    def _pair_json(self, action: str, observation: str) -> bytes:
        """``"action","observation"`` as JSON (``orjson.dumps`` of the pair without its brackets)."""
        last = self._last
        if last is not None and last[0] == action and last[1] == observation:
            return last[2]
        encoded = orjson.dumps(action) + b"," + orjson.dumps(observation)
        self._last = (action, observation, encoded)
        return encoded


def dedup(samples: Iterable[TrainSample], stats: StepCounter | None = None) -> Iterator[TrainSample]:
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


def _split_key(sample: TrainSample, key: str) -> str:
    if key.startswith("meta."):
        return str(sample.meta.get("trajectory", {}).get(key[5:], ""))
    return str(getattr(sample, key))


def split_by_source(samples: Iterable[TrainSample], eval_fraction: float = 0.1, seed: int = 0,
                    stats: StepCounter | None = None, key: str = "source") -> Iterator[TrainSample]:
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
        yield sample.model_copy(update={"split": side})


def samples_to_bench_rows(samples: Iterable[TrainSample]) -> Iterator[dict[str, Any]]:
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


def _trajectory_groups(samples: Iterable[TrainSample]) -> Iterator[list[TrainSample]]:
    """Runs of samples of one trajectory; a repeated turn number starts a new run (a duplicate)."""
    group: list[TrainSample] = []
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


# -- dataset statistics ----------------------------------------------------------------------------

HIST_EDGES: tuple[int, ...] = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
_EDGES = list(HIST_EDGES)


class Histogram(BaseModel):
    """Counts per power-of-two bin: bin *i* holds ``edges[i] <= n < edges[i+1]`` (the last is open)."""

    edges: list[int] = Field(default_factory=lambda: list(HIST_EDGES))
    counts: list[int] = Field(default_factory=lambda: [0] * len(HIST_EDGES))
    total: int = 0
    max: int = 0

    def add(self, n: int) -> None:
        tally = _HistTally(self)
        tally.add(n)
        tally.flush()


class DatasetStats(BaseModel):
    """Counts per domain, mask categories, splits and token-length histograms of a sample stream."""

    samples: int = 0
    trajectories: int = 0
    domains: dict[str, int] = Field(default_factory=dict)
    categories: dict[str, int] = Field(default_factory=dict)
    kept: dict[str, int] = Field(default_factory=dict)
    splits: dict[str, int] = Field(default_factory=dict)
    action_tokens: Histogram = Field(default_factory=Histogram)
    observation_tokens: Histogram = Field(default_factory=Histogram)
    _last: str | None = None

    def add(self, sample: TrainSample) -> TrainSample:
        """Count ``sample`` (and pass it on); a stream is counted faster by :class:`DatasetTally`."""
        tally = DatasetTally(self)
        tally.add(sample)
        tally.stats()
        return sample

    def shares(self) -> dict[str, float]:
        total = sum(self.categories.values())
        return {c: self.categories.get(c, 0) / total for c in MASK_CATEGORIES} if total else {}


class DatasetTally:
    """Counts a sample stream into a :class:`DatasetStats` with plain attributes on the hot path.

    Why: assigning a field of a pydantic model costs far more than a plain attribute, and each
    sample updates several counters. The dicts and histogram bins of ``into`` are updated in
    place; its integer fields are written back by :meth:`stats`.
    """

    def __init__(self, into: DatasetStats | None = None) -> None:
        self.into = into if into is not None else DatasetStats()
        d = self.into
        self.samples, self.trajectories, self.last = d.samples, d.trajectories, d._last
        self.hists = [_HistTally(d.action_tokens), _HistTally(d.observation_tokens)]

    def add(self, sample: TrainSample) -> TrainSample:
        """Count ``sample`` (and pass it on, so this can sit inside a stream)."""
        d = self.into
        self.samples += 1
        if sample.trajectory_id != self.last or sample.turn == 1:
            self.trajectories += 1
        self.last = sample.trajectory_id
        d.domains[sample.domain] = d.domains.get(sample.domain, 0) + 1
        loss = sample.mask
        stats = loss.stats if loss else None
        actions, observations = self.hists
        actions.add(stats.action_tokens if stats else len(content_tokens(sample.action)))
        observations.add(stats.obs_tokens if stats else
                         len(content_tokens(sample.observation, observation=True)))
        if loss is not None:
            cat = loss.category
            d.categories[cat] = d.categories.get(cat, 0) + 1
            d.kept[cat] = d.kept.get(cat, 0) + int(loss.keep)
        if sample.split is not None:
            d.splits[sample.split] = d.splits.get(sample.split, 0) + 1
        return sample

    def stats(self) -> DatasetStats:
        """The counts so far (the same object every call)."""
        d = self.into
        d.samples, d.trajectories, d._last = self.samples, self.trajectories, self.last
        for hist in self.hists:
            hist.flush()
        return d


class _HistTally:
    """A :class:`Histogram`'s total and max kept as plain ints (its bins are updated in place)."""

    def __init__(self, hist: Histogram) -> None:
        self.hist, self.total, self.max = hist, hist.total, hist.max
        self.fast = hist.edges == _EDGES

    def add(self, n: int) -> None:
        if n >= 0 and self.fast:  # the usual edges: sorted, so a bisection finds the bin
            self.hist.counts[bisect_right(_EDGES, n) - 1] += 1
        else:
            edges = self.hist.edges
            self.hist.counts[max(i for i, e in enumerate(edges) if n >= e)] += 1
        self.total += n
        if n > self.max:
            self.max = n

    def flush(self) -> None:
        self.hist.total, self.hist.max = self.total, self.max


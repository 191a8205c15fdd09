"""Dataset statistics of a sample stream: counts per domain, mask category and split, token lengths.

:class:`DatasetStats` is the report (``stats.json``, ``agentworld data stats``); :class:`DatasetTally`
fills one from a stream of pydantic or plain samples (:mod:`agentworld.data.records`).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from pydantic import BaseModel, Field

from agentworld.data.tokens import content_tokens
from agentworld.data.types import MASK_CATEGORIES

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

    def add(self, sample: Any) -> Any:
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
    place; its integer fields are written back by :meth:`stats`. Samples may be
    :class:`~agentworld.data.types.TrainSample` or plain ones (the same attributes).
    """

    def __init__(self, into: DatasetStats | None = None) -> None:
        self.into = into if into is not None else DatasetStats()
        d = self.into
        self.samples, self.trajectories, self.last = d.samples, d.trajectories, d._last
        self.hists = [_HistTally(d.action_tokens), _HistTally(d.observation_tokens)]

    def add(self, sample: Any) -> Any:
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

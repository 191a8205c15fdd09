"""A sample's own recording in the retrieval corpus: found, counted, left out.

A retrieval world model whose corpus holds the trajectory a sample was cut from answers that sample
by recall, not by prediction: the demo's held-out sessions scored 94.44 that way. A recording is a
sample's *own* when it has the sample's domain and trajectory id (the row id without its
``-t<turn>``; every recorder names a trajectory after its scenario). One mechanism for everything
that evaluates retrieval on recordings: ``eval run`` (``--exclude-own``), ``agentworld demo`` and
``eval agent-predictions`` build the index with :func:`leaving_out` and say how many samples it
would have answered from their own recording (:func:`self_answers`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from agentworld.schema import BenchSample, trajectory_id


@dataclass(frozen=True, order=True)
class Recording:
    """One recorded trajectory, as the rows cut from it name it."""

    domain: str
    trajectory: str


def recording_of(row: BenchSample) -> Recording:
    """The recording a turn-level row was cut from."""
    return Recording(row.domain, trajectory_id(row.id))


def recordings_of(rows: Iterable[BenchSample]) -> frozenset[Recording]:
    """The recordings some rows were cut from."""
    return frozenset(recording_of(row) for row in rows)


def leaving_out(recordings: Collection[Recording]) -> Callable[[BenchSample], bool]:
    """The ``exclude`` predicate of a :class:`~agentworld.models.retrieval.RetrievalIndex` that leaves
    every row of these recordings out."""
    left = frozenset(recordings)
    return lambda row: recording_of(row) in left


@dataclass(frozen=True)
class SelfAnswers:
    """How many evaluated samples the index holds the own recording of."""

    answered: int
    """Samples whose own recording is in the index."""
    total: int

    def warning(self) -> str | None:
        """The one line a run prints when the index can answer samples from their own recording."""
        if not self.answered:
            return None
        return (f"warning: {self.answered} of {self.total} samples are answered from their own recording "
                "(the retrieval corpus holds the trajectories they were cut from); --exclude-own leaves "
                "them out")


def self_answers(samples: Collection[BenchSample], indexed: Collection[Recording]) -> SelfAnswers:
    """Count ``samples`` whose own recording is among the ``indexed`` ones."""
    held = frozenset(indexed)
    return SelfAnswers(answered=sum(recording_of(s) in held for s in samples), total=len(samples))


__all__ = ["Recording", "SelfAnswers", "leaving_out", "recording_of", "recordings_of", "self_answers"]

"""How much of a held-out set a corpus already holds: its recordings, and its (action, observation) pairs.

A held-out set leaks when the corpus a world model learns or retrieves from already answers it: by
scenario (a recording of the same trajectory) or by content (the same action met with the same
observation in another session). Pairs are compared as the retrieval world model finds them: the
action by its domain's retrieval key (terminal: the keystrokes; tool calls: name and sorted
arguments), the observation with runtime metadata masked (:func:`agentworld.domains.content.mask`:
container ids, timestamps, sizes), so two screens that differ only in a hostname count as one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from agentworld.domains.content import mask
from agentworld.domains.retrieval_keys import retrieval_keys
from agentworld.models.retrieval_own import recording_of
from agentworld.schema import BenchSample


@dataclass(frozen=True)
class Overlap:
    """What a corpus shares with a held-out set (one turn per held-out row)."""

    turns: int
    shared: tuple[str, ...]
    """Ids of the held-out rows whose (action, observation) pair the corpus holds."""
    recordings: tuple[str, ...]
    """Held-out trajectories the corpus holds a recording of (same domain and trajectory id)."""

    @property
    def rate(self) -> float:
        """Shared turns as a fraction of the held-out turns."""
        return len(self.shared) / self.turns if self.turns else 0.0


def _pair(domain: str, action: str, observation: str) -> tuple[str, str, str]:
    return domain, retrieval_keys(domain).key(action).text, mask(observation).text


def pair_overlap(heldout: Iterable[BenchSample], corpus: Iterable[BenchSample]) -> Overlap:
    """Measure how much of ``heldout`` (each row's own turn) ``corpus`` (every turn of its rows) holds."""
    held = list(heldout)
    pairs: set[tuple[str, str, str]] = set()
    recorded = set()
    for row in corpus:
        recorded.add(recording_of(row))
        pairs.update(_pair(row.domain, a, o) for a, o in zip(row.prompt, row.response, strict=False))
    shared = tuple(row.id for row in held if _pair(row.domain, row.action, row.ground_truth) in pairs)
    leaked = sorted({recording_of(row) for row in held} & recorded)
    return Overlap(turns=len(held), shared=shared, recordings=tuple(r.trajectory for r in leaked))


__all__ = ["Overlap", "pair_overlap"]

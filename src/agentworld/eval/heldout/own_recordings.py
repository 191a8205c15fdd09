"""``--exclude-own``: which evaluated samples' own recordings the retrieval world model leaves out.

A retrieval index holding the trajectory a sample was cut from answers it by recall (the mechanism:
:mod:`agentworld.models.retrieval_own`). The default (``None``) leaves out the recordings of the
built-in held-out scenarios — those sets exist to be predicted unseen, and a recording of one is
recognised by its trajectory id, the scenario's name. Other data keeps its own recordings by default
(the run prints how many samples they answer): the corpus is then the user's choice, and a matching
id in arbitrary data (``task-1``) is a hint, not proof, of the same recording. ``True`` leaves out
every evaluated sample's recording, ``False`` none (an upper bound).
"""

from __future__ import annotations

from collections.abc import Iterable

from agentworld.domains.heldout import heldout_sets
from agentworld.models.retrieval_own import Recording, recordings_of
from agentworld.schema import BenchSample


def recordings_to_leave_out(exclude_own: bool | None, samples: Iterable[BenchSample]) -> frozenset[Recording]:
    """The recordings the index leaves out under ``--exclude-own`` (True), ``--keep-own`` (False) or the
    default (None: those of the built-in held-out scenarios)."""
    if exclude_own is False:
        return frozenset()
    own = recordings_of(samples)
    if exclude_own:
        return own
    held = heldout_sets()
    return frozenset(r for r in own if r.trajectory in held.get(r.domain, frozenset()))


__all__ = ["recordings_to_leave_out"]

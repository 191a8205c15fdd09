"""What a forked episode (:meth:`Simulator.fork`) runs with instead of its parent's router and ledger.

Why: a planner branches an episode to imagine actions; the branch must leave the live episode as it
was (its history, ledger, fault draws, stored pages and routing state) and must never act on the real
environment, which belongs to the live episode alone. So a fork gets its own deep copies of the
per-episode state and a :class:`ForkRouter` that sends every step to the world model.
"""

from __future__ import annotations

import copy
from typing import Any

from agentworld.errors import AgentWorldError
from agentworld.sim.ledger import Ledger

__all__ = ["ForkRouter", "copy_ledger"]


class ForkRouter:
    """A fork's router: every step goes to the world model; the real environment is out of reach.

    The parent's routing state at the fork (real steps taken, whether the real environment still
    matches) is kept for a planner to read; stepping the fork never changes the parent's router.
    """

    policy = "model"

    def __init__(self, parent: Any | None = None) -> None:
        self.real_steps = int(getattr(parent, "real_steps", 0) or 0)
        self.diverged = bool(getattr(parent, "diverged", False))

    def route(self, domain: str, action: str) -> str:
        return "model"

    async def execute(self, action: str) -> str:
        raise AgentWorldError("a forked episode never executes on the real environment")


def copy_ledger(ledger: Ledger) -> Ledger:
    """An independent copy of ``ledger`` (deep), so a fork's facts never reach its parent's."""
    try:
        return copy.deepcopy(ledger)
    except Exception as exc:
        raise AgentWorldError(f"cannot fork the episode: its ledger ({type(ledger).__name__}) cannot be "
                              f"copied ({type(exc).__name__}: {exc}); give it a __deepcopy__") from None

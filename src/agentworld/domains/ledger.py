"""The state ledger: facts a session itself established, and checks of each prediction against them.

A world model forgets: after ``cd repo`` the next prompt shows ``/app`` again, a file written three
turns ago comes back with other content, an order looked up twice changes its total. The ledger
records what the session's own actions and observations established (terminal: cwd, host, files,
environment variables; MCP: entities and their fields), reports each conflict of a new prediction
as a :class:`Contradiction` and repairs what can be repaired deterministically. The simulator
re-asks the model first and repairs only what survives (docs/SIMULATOR.md).

A domain package provides its ledger (``DomainPlugin.ledger``); domains without one get a
:class:`NullLedger`, so the simulator never special-cases them. The simulator finds it with
:func:`agentworld.sim.ledger.make_ledger`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

SUMMARY_LIMIT = 1500
"""Most characters :meth:`Ledger.summary` returns: it goes into every prompt."""


class Contradiction(BaseModel):
    """One conflict between a prediction and the ledger.

    ``message`` is written for the world model (it is quoted in the re-ask), ``expected``/``found``
    are the conflicting values, e.g. ``/app/repo`` and ``/app`` for a prompt's cwd.
    """

    model_config = ConfigDict(frozen=True)

    kind: str
    message: str
    expected: str | None = None
    found: str | None = None

    def __str__(self) -> str:
        return self.message


@runtime_checkable
class Ledger(Protocol):
    """What the simulator calls each step: ``check`` → (re-ask) → ``repair`` → ``update``."""

    def summary(self) -> str:
        """Compact state for the prompt ("" when nothing is known)."""
        ...

    def check(self, action: str, observation: str) -> list[Contradiction]:
        """Conflicts of ``observation`` (the prediction for ``action``) with the ledger."""
        ...

    def repair(self, action: str, observation: str, found: list[Contradiction]) -> str | None:
        """``observation`` with the conflicts in ``found`` fixed, or None if none could be fixed."""
        ...

    def update(self, action: str, observation: str) -> None:
        """Record what ``action`` and its final ``observation`` established."""
        ...


class NullLedger:
    """The ledger of domains without rules: knows nothing, finds nothing, repairs nothing."""

    def summary(self) -> str:
        return ""

    def check(self, action: str, observation: str) -> list[Contradiction]:
        return []

    def repair(self, action: str, observation: str, found: list[Contradiction]) -> str | None:
        return None

    def update(self, action: str, observation: str) -> None:
        return None


def bounded(lines: list[str], limit: int = SUMMARY_LIMIT) -> str:
    """Join summary lines, dropping whole trailing lines (and saying so) past ``limit`` characters.

    >>> bounded(["cwd: /app", "x" * 50], limit=30)
    'cwd: /app\\n… (1 more)'
    """
    out: list[str] = []
    used = 0
    for i, line in enumerate(lines):
        more = f"… ({len(lines) - i} more)"
        if used + len(line) + 1 > limit - len(more) - 1:
            out.append(more)
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(out)[:limit]


__all__ = ["SUMMARY_LIMIT", "Contradiction", "Ledger", "NullLedger", "bounded"]

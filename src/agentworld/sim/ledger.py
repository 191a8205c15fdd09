"""The simulator's ledger lookup: the domain's own ledger (``DomainPlugin.ledger``) or a null one.

The ledger records (:class:`Contradiction`, :class:`Ledger`, :class:`NullLedger`) live in
:mod:`agentworld.domains.ledger`, below the simulator, so domain packages can implement them.
"""

from __future__ import annotations

from agentworld.domains.base import plugin_of, resolve
from agentworld.domains.ledger import SUMMARY_LIMIT, Contradiction, Ledger, NullLedger, bounded
from agentworld.domains.spec import WorldSpec


def make_ledger(domain: str, spec: WorldSpec | None = None) -> Ledger:
    """The ledger of ``domain`` (its plugin's ``ledger`` factory, called with ``spec``), else a null one."""
    found = plugin_of(domain.split("/")[-1].lower())
    if found.ledger is None:
        return NullLedger()
    ledger: Ledger = resolve(found.ledger)(spec)
    return ledger


__all__ = ["SUMMARY_LIMIT", "Contradiction", "Ledger", "NullLedger", "bounded", "make_ledger"]

"""agentworld: language world models for agents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["Simulator", "__version__"]

if TYPE_CHECKING:
    from agentworld.sim.session import Simulator


def __getattr__(name: str) -> Any:
    """Import heavy parts on first use so ``import agentworld`` stays light."""
    if name == "Simulator":
        from agentworld.sim.session import Simulator

        return Simulator
    raise AttributeError(f"module 'agentworld' has no attribute {name!r}")

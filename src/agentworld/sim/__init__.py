"""The simulator: episodes of a world-model environment with enforced state, faults and sources.

``from agentworld.sim import Simulator, WorldSpec`` — see ``docs/SIMULATOR.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworld.lazy import lazy_exports

if TYPE_CHECKING:
    from agentworld.domains.spec import load_control_spec
    from agentworld.models.cache import ResponseCache
    from agentworld.sim.controls import FaultInjector
    from agentworld.sim.history import ActionError
    from agentworld.sim.session import Router, Simulator
    from agentworld.sim.types import (
        ControlSpec,
        FaultRule,
        InjectedFault,
        SessionState,
        StepResult,
        TurnRecord,
        WorldSpec,
    )

_EXPORTS = {
    "ResponseCache": "agentworld.models.cache",
    "FaultInjector": "agentworld.sim.controls",
    "load_control_spec": "agentworld.domains.spec",
    "ActionError": "agentworld.sim.history",
    "Router": "agentworld.sim.session",
    "Simulator": "agentworld.sim.session",
    "ControlSpec": "agentworld.sim.types",
    "FaultRule": "agentworld.sim.types",
    "InjectedFault": "agentworld.sim.types",
    "SessionState": "agentworld.sim.types",
    "StepResult": "agentworld.sim.types",
    "TurnRecord": "agentworld.sim.types",
    "WorldSpec": "agentworld.sim.types",
}
__all__ = [
    "ActionError",
    "ControlSpec",
    "FaultInjector",
    "FaultRule",
    "InjectedFault",
    "ResponseCache",
    "Router",
    "SessionState",
    "Simulator",
    "StepResult",
    "TurnRecord",
    "WorldSpec",
    "load_control_spec",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

"""The simulator: episodes of a world-model environment with enforced state, faults and sources.

``from agentworld.sim import Simulator, WorldSpec`` — see ``docs/SIMULATOR.md``.
"""

from agentworld.sim.cache import SimCache
from agentworld.sim.controls import FaultInjector, load_control_spec
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

__all__ = [
    "ActionError",
    "ControlSpec",
    "FaultInjector",
    "FaultRule",
    "InjectedFault",
    "Router",
    "SessionState",
    "SimCache",
    "Simulator",
    "StepResult",
    "TurnRecord",
    "WorldSpec",
    "load_control_spec",
]

"""Adapters from the Simulator to agent frameworks: TRL ``environment_factory``, Gymnasium, OpenEnv.

Each adapter imports its framework lazily (Gymnasium is the ``gym`` extra, OpenEnv the ``openenv``
extra), so ``import agentworld.serve.adapters`` never needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentworld.sim.episode import step_info
from agentworld.sim.types import WorldSpec

if TYPE_CHECKING:
    from agentworld.serve.adapters.gym import SimEnv

__all__ = ["UNSET", "SimEnv", "SimulatedTools", "as_spec", "environment_rewards", "make_trl_environment",
           "step_info", "trl_dataset_rows", "trl_environment"]


def as_spec(value: WorldSpec | dict[str, Any] | str | None, default: WorldSpec | None = None) -> WorldSpec:
    """A WorldSpec from itself, its dict or its JSON text (``None`` → ``default`` or a terminal)."""
    if value is None:
        return default or WorldSpec()
    if isinstance(value, WorldSpec):
        return value
    return WorldSpec.model_validate_json(value) if isinstance(value, str) else WorldSpec.model_validate(value)


from agentworld.serve.adapters.trl import (  # noqa: E402 (after the helpers the adapters share)
    UNSET,
    SimulatedTools,
    environment_rewards,
    make_trl_environment,
    trl_dataset_rows,
    trl_environment,
)


def __getattr__(name: str) -> Any:
    if name == "SimEnv":
        from agentworld.serve.adapters.gym import SimEnv

        return SimEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

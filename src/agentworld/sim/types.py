"""Records of the simulator: step results and session state; world and control specs re-exported.

One wire schema for every transport: the Python API, the HTTP session API and the MCP server all
use these pydantic models unchanged (STYLE point 8).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentworld.domains.spec import (
    FAULT_KINDS,
    FAULT_PARAMS,
    ControlSpec,
    FaultKind,
    FaultRule,
    InjectedFault,
    Seed,
    WorldSpec,
)
from agentworld.models.base import Usage

Source = Literal["cache", "world_model", "real", "fault", "template"]
"""Where an observation came from: the response cache, the world model, a real environment, an
injected fault rendered by the world model (``fault``) or by a template (``template``)."""


class StepResult(BaseModel):
    """What one ``step`` returns, in every transport."""

    model_config = ConfigDict(frozen=True)

    observation: str
    """Observation text without the marker and without tags (terminal: the screen)."""
    source: Source
    turn: int
    """1-based number of this step in the episode."""
    reasoning: str | None = None
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    truncated: bool = False
    repaired: bool = False
    """The ledger changed the observation (re-asked the model or repaired deterministic content)."""
    fault: InjectedFault | None = None
    contradictions: list[str] = Field(default_factory=list)
    """Conflicts with the state ledger found in the model's first answer."""
    is_error: bool = False
    """The observation is an error result: an invalid call, an injected fault, or an answer (the world
    model's or the real environment's) that the domain's ``error_patterns`` call a failure
    (:func:`agentworld.domains.failures.is_error`, the definition the data pipeline uses too)."""
    meta: dict[str, Any] = Field(default_factory=dict)


class TurnRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    action: str
    observation: str
    source: Source


class SessionState(BaseModel):
    """A session's visible state (``GET /sessions/{id}/state``)."""

    model_config = ConfigDict(frozen=True)

    spec: WorldSpec
    seed: int
    turn: int
    history: list[TurnRecord]
    ledger: str
    """The ledger's compact summary."""
    faults: list[InjectedFault] = Field(default_factory=list)


__all__ = ["FAULT_KINDS", "FAULT_PARAMS", "ControlSpec", "FaultKind", "FaultRule", "InjectedFault", "Seed",
           "SessionState", "Source", "StepResult", "TurnRecord", "WorldSpec"]

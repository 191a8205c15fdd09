"""Records of the data pipeline: turn-level training samples and per-step statistics.

A :class:`~agentworld.schema.Trajectory` (unified schema) flows through ingest → cleaning →
expansion → masking → split → export. Expansion turns it into :class:`TrainSample` records, one
per turn, each conditioned on everything before it; masking decides whether a sample's target
(the observation) carries loss.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MaskCategory = Literal["state_change", "retrieval", "expansion", "error", "boilerplate", "echo", "empty"]
MASK_CATEGORIES: tuple[str, ...] = ("state_change", "retrieval", "expansion", "error", "boilerplate", "echo",
                                   "empty")


class TurnStats(BaseModel):
    """Information-theoretic statistics of one (action, observation) pair, on tokens.

    overlap: share of observation tokens also in the context (history + action);
    novelty: share of observation tokens never seen in the context (1 - overlap on types);
    jaccard: Jaccard similarity of the action's and observation's token sets;
    length_ratio: observation tokens / action tokens.
    """

    model_config = ConfigDict(frozen=True)

    overlap: float
    novelty: float
    jaccard: float
    length_ratio: float
    obs_tokens: int
    action_tokens: int


class LossMask(BaseModel):
    """Whether the sample's observation is trained on, and why."""

    model_config = ConfigDict(frozen=True)

    category: MaskCategory
    keep: bool
    keep_ratio: float
    stats: TurnStats | None = None


class TrainSample(BaseModel):
    """Predict ``observation`` from ``system``, ``history`` and ``action`` (one turn of a trajectory)."""

    model_config = ConfigDict(frozen=True)

    id: str
    """``<trajectory id>-t<turn>`` (1-based)."""
    trajectory_id: str
    turn: int
    domain: str
    task: str | None = None
    source: str = ""
    """Where the trajectory came from (file, recorder, log); the split is made by source."""
    system: str
    history: list[tuple[str, str]] = Field(default_factory=list)
    action: str
    observation: str
    total_turns: int
    mask: LossMask | None = None
    split: Literal["train", "eval"] | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


class StepStats(BaseModel):
    """What one processing step did, logged by the pipeline."""

    model_config = ConfigDict(frozen=True)

    step: str
    inputs: int
    outputs: int
    dropped: int = 0
    details: dict[str, Any] = Field(default_factory=dict)

"""What a plan returns: frozen records of the candidates, their imagined rollouts and their scores.

Why records and not the forks themselves: a plan is shown (``agentworld plan``, ``--json``), compared
across settings and kept in logs; the forks are gone once it is made, and nothing a caller holds
must be able to change the episode it was made from.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ImaginedStep(BaseModel):
    """One imagined step: the action and what the world model predicted it shows."""

    model_config = ConfigDict(frozen=True)

    action: Any
    observation: str
    source: str
    is_error: bool = False


class Verdict(BaseModel):
    """A scorer's judgement of one imagined rollout: ``score`` in [0, 1] and why."""

    model_config = ConfigDict(frozen=True)

    score: float = Field(ge=0.0, le=1.0)
    label: str
    """``success``/``on track``/``failure`` (judge), ``pass``/``fail`` (rule), ``unparsed``."""
    detail: str = ""


class Sample(BaseModel):
    """One imagined rollout of a candidate (one fork, one seed)."""

    model_config = ConfigDict(frozen=True)

    seed: int
    steps: tuple[ImaginedStep, ...]
    verdict: Verdict


class RankedCandidate(BaseModel):
    """A candidate action with its mean score over its samples.

    Attributes:
        index: its position among the candidates as proposed (ties keep this order).
    """

    model_config = ConfigDict(frozen=True)

    index: int
    action: Any
    score: float
    samples: tuple[Sample, ...]

    @property
    def observation(self) -> str:
        """The first sample's imagined observation of the action itself (what a table shows)."""
        return self.samples[0].steps[0].observation if self.samples and self.samples[0].steps else ""


class PlanResult(BaseModel):
    """The candidates ranked best first, and the settings they were imagined with."""

    model_config = ConfigDict(frozen=True)

    ranked: tuple[RankedCandidate, ...]
    horizon: int
    samples: int
    scorer: str

    @property
    def best(self) -> RankedCandidate:
        return self.ranked[0]

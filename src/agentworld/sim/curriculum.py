"""A perturbation curriculum: fault rates that rise over a run's episodes, and per-episode facts.

Why here (``sim``): Sim RL rollouts (``train``), their Ray jobs and the TRL dataset rows
(``serve.adapters.trl``) all turn one world spec into a sequence of episode specs the same way; the
rules it adds are the simulator's own seeded fault rules (:mod:`agentworld.sim.controls`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agentworld.sim.types import FaultKind, FaultRule, WorldSpec

__all__ = ["Curriculum"]


class Curriculum(BaseModel):
    """Fault rate rising linearly over episodes, split evenly over ``fault_kinds``; optional facts.

    Episode ``i`` of ``n`` has total rate ``rate_start + (rate_end - rate_start) * i / (n - 1)``;
    each kind gets its own seeded rule at ``rate / len(fault_kinds)`` (so the chance a call faults
    is about the total rate). ``facts[i % len(facts)]`` are episode ``i``'s fictional-world facts.
    """

    model_config = ConfigDict(frozen=True)

    fault_kinds: list[FaultKind] = Field(default_factory=list)
    rate_start: float = Field(0.0, ge=0, le=1)
    rate_end: float = Field(0.5, ge=0, le=1)
    facts: list[list[str]] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    """Limit faults to these tools (empty: every call)."""

    def rate(self, episode: int, episodes: int) -> float:
        if episodes <= 1:
            return self.rate_start
        return self.rate_start + (self.rate_end - self.rate_start) * episode / (episodes - 1)

    def spec_for(self, spec: WorldSpec, episode: int, episodes: int) -> WorldSpec:
        """``spec`` with this episode's fault rules and facts added to its controls."""
        rate = self.rate(episode, episodes)
        rules = [FaultRule(kind=kind, rate=rate / len(self.fault_kinds), tools=list(self.tools))
                 for kind in self.fault_kinds] if self.fault_kinds else []
        facts = self.facts[episode % len(self.facts)] if self.facts else []
        controls = spec.controls.model_copy(update={"faults": [*spec.controls.faults, *rules],
                                                    "facts": [*spec.controls.facts, *facts]})
        return spec.model_copy(update={"controls": controls})

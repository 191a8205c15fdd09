"""Predict before acting: imagine candidate actions on forks of a live episode, score them, act on the best.

See :mod:`agentworld.plan.planner` (the planner), :mod:`agentworld.plan.scorers` (judge and rule
scorers), :mod:`agentworld.plan.agents` (who proposes and continues), :mod:`agentworld.plan.bench`
(measuring it on a domain's futile-action tasks, ``DomainPlugin.plan_tasks``) and ``agentworld plan``
(a quick look).
Exports are imported on first use, so ``agentworld plan --help`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworld.lazy import lazy_exports

if TYPE_CHECKING:
    from agentworld.plan.agents import Agent, ModelAgent, ScriptedAgent
    from agentworld.plan.planner import Decision, Planner
    from agentworld.plan.records import ImaginedStep, PlanResult, RankedCandidate, Sample, Verdict
    from agentworld.plan.scorers import (
        JudgeScorer,
        PlanContext,
        RuleCheck,
        RuleScorer,
        Scorer,
        parse_verdict,
    )

_EXPORTS = {
    **dict.fromkeys(("Agent", "ModelAgent", "ScriptedAgent"), "agentworld.plan.agents"),
    **dict.fromkeys(("Decision", "Planner"), "agentworld.plan.planner"),
    **dict.fromkeys(("ImaginedStep", "PlanResult", "RankedCandidate", "Sample", "Verdict"),
                    "agentworld.plan.records"),
    **dict.fromkeys(("JudgeScorer", "PlanContext", "RuleCheck", "RuleScorer", "Scorer", "parse_verdict"),
                    "agentworld.plan.scorers"),
}

__all__ = ["Agent", "Decision", "ImaginedStep", "JudgeScorer", "ModelAgent", "PlanContext", "PlanResult",
           "Planner", "RankedCandidate", "RuleCheck", "RuleScorer", "Sample", "Scorer", "ScriptedAgent",
           "Verdict", "parse_verdict"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

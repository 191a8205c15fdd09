"""Predict before acting: imagine candidate actions on forks of a live episode, score them, act on the best.

See :mod:`agentworld.plan.planner` (the planner), :mod:`agentworld.plan.scorers` (judge and rule
scorers), :mod:`agentworld.plan.agents` (who proposes and continues), :mod:`agentworld.plan.futile`
(the futile-action terminal tasks the planner is measured on) and ``agentworld plan`` (a quick look).
"""

from agentworld.plan.agents import Agent, ModelAgent, ScriptedAgent
from agentworld.plan.planner import Decision, Planner
from agentworld.plan.records import ImaginedStep, PlanResult, RankedCandidate, Sample, Verdict
from agentworld.plan.scorers import JudgeScorer, PlanContext, RuleCheck, RuleScorer, Scorer, parse_verdict

__all__ = ["Agent", "Decision", "ImaginedStep", "JudgeScorer", "ModelAgent", "PlanContext", "PlanResult",
           "Planner", "RankedCandidate", "RuleCheck", "RuleScorer", "Sample", "Scorer", "ScriptedAgent",
           "Verdict", "parse_verdict"]

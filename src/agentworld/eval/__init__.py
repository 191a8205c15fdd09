"""Evaluation: infer, judge (rubric / Turing / reference), rule tier, score and report.

>>> from agentworld.eval import EvalConfig, run_eval  # doctest: +SKIP
>>> report = run_eval(EvalConfig(data=["bench/"], out="runs/x", model="retrieval", no_judge=True))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworld.lazy import lazy_exports

if TYPE_CHECKING:
    from agentworld.eval.config import EvalConfig, InferConfig, JudgeConfig
    from agentworld.eval.infer import model_request
    from agentworld.eval.judge import JudgeSettings, pair_messages, rubric_messages
    from agentworld.eval.records import JudgmentRow, JudgmentStatus, PredictionRow, RuleRow
    from agentworld.eval.runfolder import RunFolder
    from agentworld.eval.runner import run_eval, run_judge, score_run
    from agentworld.eval.score import DomainScore, OverallScore, ScoreReport, score_official_judged
    from agentworld.models.cache import ResponseCache

_EXPORTS = {
    "EvalConfig": "agentworld.eval.config",
    "InferConfig": "agentworld.eval.config",
    "JudgeConfig": "agentworld.eval.config",
    "PredictionRow": "agentworld.eval.records",
    "JudgmentStatus": "agentworld.eval.records",
    "RuleRow": "agentworld.eval.records",
    "RunFolder": "agentworld.eval.runfolder",
    "ResponseCache": "agentworld.models.cache",
    "model_request": "agentworld.eval.infer",
    "JudgeSettings": "agentworld.eval.judge",
    "JudgmentRow": "agentworld.eval.records",
    "pair_messages": "agentworld.eval.judge",
    "rubric_messages": "agentworld.eval.judge",
    "run_eval": "agentworld.eval.runner",
    "run_judge": "agentworld.eval.runner",
    "score_run": "agentworld.eval.runner",
    "DomainScore": "agentworld.eval.score",
    "OverallScore": "agentworld.eval.score",
    "ScoreReport": "agentworld.eval.score",
    "score_official_judged": "agentworld.eval.score",
}
__all__ = [
    "DomainScore",
    "EvalConfig",
    "InferConfig",
    "JudgeConfig",
    "JudgeSettings",
    "JudgmentRow",
    "JudgmentStatus",
    "OverallScore",
    "PredictionRow",
    "ResponseCache",
    "RuleRow",
    "RunFolder",
    "ScoreReport",
    "model_request",
    "pair_messages",
    "rubric_messages",
    "run_eval",
    "run_judge",
    "score_official_judged",
    "score_run",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

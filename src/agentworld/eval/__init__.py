"""Evaluation: infer, judge (rubric / Turing / reference), rule tier, score and report.

>>> from agentworld.eval import EvalConfig, run_eval  # doctest: +SKIP
>>> report = run_eval(EvalConfig(data=["bench/"], out="runs/x", model="retrieval", no_judge=True))
"""

from agentworld.eval.cache import AsyncJournal, ResponseCache, cache_key
from agentworld.eval.config import EvalConfig, InferConfig, JudgeConfig
from agentworld.eval.infer import PredictionRow, model_request
from agentworld.eval.judge import JudgeSettings, JudgmentRow, pair_messages, rubric_messages
from agentworld.eval.runner import run_eval, run_judge, score_run
from agentworld.eval.score import DomainScore, OverallScore, ScoreReport, score_official_judged

__all__ = [
    "AsyncJournal",
    "DomainScore",
    "EvalConfig",
    "InferConfig",
    "JudgeConfig",
    "JudgeSettings",
    "JudgmentRow",
    "OverallScore",
    "PredictionRow",
    "ResponseCache",
    "ScoreReport",
    "cache_key",
    "model_request",
    "pair_messages",
    "rubric_messages",
    "run_eval",
    "run_judge",
    "score_official_judged",
    "score_run",
]

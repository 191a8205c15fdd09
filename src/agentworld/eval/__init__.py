"""Evaluation: infer, judge (rubric / Turing / reference), rule tier, score and report.

>>> from agentworld.eval import EvalConfig, run_eval  # doctest: +SKIP
>>> report = run_eval(EvalConfig(data=["bench/"], out="runs/x", model="retrieval", no_judge=True))

The names below are imported on first use, so importing one part (the CLI's configs, the
templates the mock server shares) does not load the runner and its dependencies.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentworld.eval.cache import AsyncJournal, ResponseCache, cache_key
    from agentworld.eval.config import EvalConfig, InferConfig, JudgeConfig
    from agentworld.eval.infer import PredictionRow, model_request
    from agentworld.eval.judge import JudgeSettings, JudgmentRow, pair_messages, rubric_messages
    from agentworld.eval.runner import run_eval, run_judge, score_run
    from agentworld.eval.score import DomainScore, OverallScore, ScoreReport, score_official_judged

_LAZY = {
    "AsyncJournal": "cache", "ResponseCache": "cache", "cache_key": "cache",
    "EvalConfig": "config", "InferConfig": "config", "JudgeConfig": "config",
    "PredictionRow": "infer", "model_request": "infer",
    "JudgeSettings": "judge", "JudgmentRow": "judge", "pair_messages": "judge", "rubric_messages": "judge",
    "run_eval": "runner", "run_judge": "runner", "score_run": "runner",
    "DomainScore": "score", "OverallScore": "score", "ScoreReport": "score", "score_official_judged": "score",
}

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


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"agentworld.eval.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'agentworld.eval' has no attribute {name!r}")

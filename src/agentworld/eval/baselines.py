"""Trivial predictors scored beside every rule-tier number, and skill over the frame-only one.

Why: a score means little without the score of an answer that knows nothing. For each sample the
rule tier is also computed for three predictions that need no world model — the *frame-only*
prediction (the domain's format with no content: terminal echo + prompt, MCP an empty result of the
right shape), the *empty* prediction, and *repeat the previous observation* — and a score ``s`` is
shown as skill over the frame-only baseline ``b``: ``(s − b) / (100 − b)`` (0: no better than
knowing the format; 1: perfect; negative: worse).
"""

from __future__ import annotations

from collections.abc import Iterable
from statistics import fmean

from agentworld.eval.rules import frame_only_prediction, score_rules
from agentworld.schema import BenchSample

BASELINES: tuple[str, ...] = ("frame_only", "empty", "repeat_previous")


def baseline_predictions(sample: BenchSample) -> dict[str, str]:
    """The trivial predictions for ``sample``, by :data:`BASELINES` name."""
    history = sample.history()
    return {"frame_only": frame_only_prediction(sample.domain, sample.ground_truth, sample), "empty": "",
            "repeat_previous": history[-1][1] if history else ""}


def baseline_scores(sample: BenchSample) -> dict[str, float]:
    """Rule-tier overall (0–100) of each trivial prediction for ``sample``."""
    return {name: score_rules(sample.domain, text, sample.ground_truth, sample).overall
            for name, text in baseline_predictions(sample).items()}


def mean_baselines(samples: Iterable[BenchSample]) -> dict[str, float]:
    """Mean rule-tier overall of each trivial predictor over ``samples`` (empty dict when none)."""
    rows = [baseline_scores(s) for s in samples]
    return {name: round(fmean(r[name] for r in rows), 2) for name in BASELINES} if rows else {}


def skill(score: float, baseline: float) -> float | None:
    """``(score − baseline) / (100 − baseline)``; None when the baseline is already perfect."""
    return None if baseline >= 100.0 else round((score - baseline) / (100.0 - baseline), 4)

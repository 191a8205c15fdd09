"""The rule tier in context: the model's rule score beside trivial baselines, and its rubric calibration.

Why: a rule-tier overall of 40 means little until one knows that knowing only the format already
scores, say, 35. So every summary shows, on the very samples the model's rule score covers, the mean
rule overall of the trivial predictors of :mod:`agentworld.eval.rules.baselines` and the model's skill over
the frame-only one and over the strongest of them. And when a run also has rubric judgments, the
Spearman rank correlation between the rule overall and the rubric total per domain says how far the
cheap, judge-free tier can stand in for the judge.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from statistics import fmean
from typing import Any

from pydantic import BaseModel, ConfigDict

from agentworld.domains import report_order
from agentworld.eval.records import JudgmentRow, RuleRow, as_judgment, as_rule
from agentworld.eval.rules.baselines import BASELINES, baseline_scores, skill, strongest
from agentworld.schema import BenchSample

MIN_CORRELATION_N = 3
"""Fewer judged samples than this give no Spearman coefficient (two points are always ±1)."""


def average_ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, tied values sharing the mean of their ranks (what Spearman's rho needs).

    >>> average_ranks([10.0, 20.0, 10.0])
    [1.5, 3.0, 1.5]
    """
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for i in order[start:end + 1]:
            ranks[i] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rho (Pearson correlation of average ranks), so ties are handled as scipy does.

    None when fewer than :data:`MIN_CORRELATION_N` pairs or when either side is constant: a
    correlation is then undefined rather than 0.
    """
    if len(xs) != len(ys):
        raise ValueError(f"spearman needs pairs: {len(xs)} x values, {len(ys)} y values")
    if len(xs) < MIN_CORRELATION_N:
        return None
    rx, ry = average_ranks(xs), average_ranks(ys)
    mx, my = fmean(rx), fmean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sxx, syy = sum((a - mx) ** 2 for a in rx), sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return round(sxy / (sxx * syy) ** 0.5, 4)


class Correlation(BaseModel):
    """A rank correlation and the number of pairs it is computed over."""

    model_config = ConfigDict(frozen=True)

    rho: float | None
    n: int


class RuleTierLine(BaseModel):
    """One domain (or all samples): the model's mean rule overall, the baselines on the same samples,
    the skill over frame-only, and (with rubric judgments) the rule/rubric rank correlation."""

    model_config = ConfigDict(frozen=True)

    n: int
    overall: float
    baselines: dict[str, float]
    skill_over_frame_only: float | None
    strongest: float = 0.0
    """The best baseline mean on these samples (:func:`~agentworld.eval.rules.baselines.strongest`)."""
    skill_over_strongest: float | None = None
    """Skill over :attr:`strongest`: above 0 only where the model beats every trivial answer."""
    rule_rubric_spearman: Correlation | None = None


class RuleTier(BaseModel):
    """What ``scores.json`` holds under ``rule_tier``; ``overall`` weights every sample equally."""

    model_config = ConfigDict(frozen=True)

    domains: dict[str, RuleTierLine]
    overall: RuleTierLine


def _rubric_totals(judgments: Iterable[JudgmentRow | Mapping[str, Any]]) -> dict[str, float]:
    """Rubric totals of the valid rubric judgments, by sample id."""
    rows = (as_judgment(r) for r in judgments)
    return {r.id: r.rubric_total for r in rows if r.rubric_total is not None}


def _line(pairs: list[tuple[BenchSample, float]], base: dict[str, dict[str, float]],
          rubric: dict[str, float] | None) -> RuleTierLine:
    """Summarise (sample, model rule overall) pairs; ``rubric`` None means the run has no rubric."""
    model = round(fmean(score for _, score in pairs), 2)
    baselines = {name: round(fmean(base[s.id][name] for s, _ in pairs), 2) for name in BASELINES}
    corr = None
    if rubric is not None:
        judged = [(score, rubric[s.id]) for s, score in pairs if s.id in rubric]
        corr = Correlation(rho=spearman([a for a, _ in judged], [b for _, b in judged]), n=len(judged))
    best = strongest(baselines)
    return RuleTierLine(n=len(pairs), overall=model, baselines=baselines, rule_rubric_spearman=corr,
                        skill_over_frame_only=skill(model, baselines["frame_only"]), strongest=best,
                        skill_over_strongest=skill(model, best))


def rule_tier(samples: Iterable[BenchSample], rules: Iterable[RuleRow | Mapping[str, Any]],
              judgments: Iterable[JudgmentRow | Mapping[str, Any]] = ()) -> RuleTier | None:
    """Summarise the rule rows of the given samples (rows of other ids are ignored).

    Returns None when no rule row matches a sample: there is nothing to put baselines beside.
    """
    by_id = {s.id: s for s in samples}
    scored = {r.id: float(r.rule["overall"]) for r in map(as_rule, rules)
              if r.id in by_id and isinstance(r.rule.get("overall"), int | float)}
    if not scored:
        return None
    base = {sid: baseline_scores(by_id[sid]) for sid in scored}
    totals = _rubric_totals(judgments)
    rubric = totals or None
    groups: dict[str, list[tuple[BenchSample, float]]] = defaultdict(list)
    for sid, score in scored.items():
        groups[by_id[sid].domain].append((by_id[sid], score))
    order = report_order(groups)
    domains = {d: _line(groups[d], base, rubric) for d in order}
    every = [p for d in order for p in groups[d]]
    return RuleTier(domains=domains, overall=_line(every, base, None))

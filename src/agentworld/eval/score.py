"""Scores: per-domain rubric means on 0–100, both "Overall" figures, failures, tokens and A/B rates.

Semantics are the official ``aggregate_scores``: over the valid (not failed) samples of a domain,
the mean of each dimension's non-zero values, normalised ``(x - 1) / 4 * 100``. The published
"Overall" is the mean of the domain scores (``domain_mean``); the official script prints the
mean over all valid samples (``sample_weighted``). Both are reported, and so are the failures the
official script drops silently.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from statistics import mean
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentworld.domains import OFFICIAL_DEFAULT_DOMAIN, report_order
from agentworld.errors import DataError
from agentworld.eval.records import (
    JudgmentRow,
    PredictionRow,
    RuleRow,
    as_judgment,
    as_prediction,
    as_rule,
)
from agentworld.eval.rules.baselines import BASELINES
from agentworld.eval.rules.context import RuleTier, rule_tier
from agentworld.eval.runfolder import RunFolder
from agentworld.inputs import read_jsonl
from agentworld.models.parsing import SCORE_DIMENSIONS
from agentworld.report_style import text_table
from agentworld.schema import BenchSample

SCORE_FIELDS: tuple[str, ...] = (*SCORE_DIMENSIONS, "total_score")


def normalise(raw: float) -> float:
    """1–5 judge scale to 0–100."""
    return (raw - 1) / 4 * 100


def _nonzero_mean(values: Iterable[float]) -> float | None:
    kept = [v for v in values if v != 0]
    return normalise(mean(kept)) if kept else None


class DomainScore(BaseModel):
    """One domain's line of the table; dimension scores are ``None`` without a valid sample."""

    model_config = ConfigDict(frozen=True)

    n: int
    valid: int
    failed: int
    format: float | None = None
    factuality: float | None = None
    consistency: float | None = None
    realism: float | None = None
    quality: float | None = None
    total_score: float | None = None
    truncated: int = 0
    no_generation: int = 0
    judge_failures: int = 0
    prediction_errors: int = 0
    tokens: dict[str, int] = Field(default_factory=dict)
    latency_s: dict[str, float] = Field(default_factory=dict)


class OverallScore(BaseModel):
    model_config = ConfigDict(frozen=True)

    domain_mean: float | None
    sample_weighted: float | None
    n: int
    valid: int
    failed: int


class ScoreReport(BaseModel):
    """What ``eval score --json`` prints and ``scores.json`` holds."""

    model_config = ConfigDict(frozen=True)

    domains: dict[str, DomainScore]
    overall: OverallScore
    judge: dict[str, Any] = Field(default_factory=dict)
    model: dict[str, Any] = Field(default_factory=dict)
    rules: dict[str, dict[str, float]] = Field(default_factory=dict)
    rule_tier: RuleTier | None = None
    """The rule overall beside the trivial baselines, skill and rubric calibration (needs the samples)."""
    turing: dict[str, Any] | None = None
    reference: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON form; a dimension without valid samples is ``null``, an A/B section absent if not run."""
        out = self.model_dump(mode="json")
        return {k: v for k, v in out.items() if v is not None}


def rubric_dims(valid: list[Mapping[str, Any]]) -> dict[str, float | None]:
    """Official per-dimension means over valid rows (zeros excluded), normalised."""
    return {dim: _nonzero_mean(float(r.get(dim, 0) or 0) for r in valid) for dim in SCORE_FIELDS}


def overall(domains: Mapping[str, DomainScore], valid_totals: list[float]) -> OverallScore:
    domain_totals = [d.total_score for d in domains.values() if d.total_score is not None]
    n = sum(d.n for d in domains.values())
    valid = sum(d.valid for d in domains.values())
    return OverallScore(domain_mean=mean(domain_totals) if domain_totals else None,
                        sample_weighted=_nonzero_mean(valid_totals), n=n, valid=valid, failed=n - valid)


def score_official_judged(rows: Sequence[Mapping[str, Any]]) -> ScoreReport:
    """Reproduce the official ``eval.py score`` numbers from its ``judged.jsonl`` rows."""
    by_domain: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        by_domain[str(row.get("task", OFFICIAL_DEFAULT_DOMAIN)).split("/")[-1]].append(row)
    domains: dict[str, DomainScore] = {}
    totals: list[float] = []
    for name in report_order(by_domain):
        group = by_domain[name]
        valid = [r for r in group if r.get("failed", 1.0) == 0.0]
        totals += [float(r.get("total_score", 0) or 0) for r in valid]
        no_gen = sum(1 for r in group if r.get("error_message") == "No model generation")
        domains[name] = DomainScore(n=len(group), valid=len(valid), failed=len(group) - len(valid),
                                    no_generation=no_gen, judge_failures=len(group) - len(valid) - no_gen,
                                    **rubric_dims(valid))
    return ScoreReport(domains=domains, overall=overall(domains, totals), judge={"source": "judged.jsonl"})


def read_official_judged(path: Path) -> list[dict[str, Any]]:
    """The rows of an official ``judged.jsonl``, each checked for what :func:`score_official_judged`
    reads: an object whose ``task`` is a string and whose scores (``failed``, ``total_score``, the
    rubric dimensions) are numbers or null. Errors name the file, line, sample id and field."""
    rows: list[dict[str, Any]] = []
    for line, row in read_jsonl(path):
        if not isinstance(row, dict):
            raise DataError(f"expected a JSON object, got {type(row).__name__}", path=str(path), line=line)
        sample = str(row["id"]) if "id" in row else None
        if not isinstance(row.get("task", ""), str):
            raise DataError(f"expected a string, got {type(row['task']).__name__}", path=str(path), line=line,
                            sample_id=sample, field="task")
        for name in ("failed", *SCORE_FIELDS):
            value = row.get(name)
            if value is not None and not isinstance(value, int | float):
                raise DataError(f"expected a number, got {type(value).__name__}", path=str(path), line=line,
                                sample_id=sample, field=name)
        rows.append(row)
    return rows


def _ab_rates(rows: list[JudgmentRow], n: int, mode: str) -> dict[str, Any]:
    valid = [r for r in rows if not r.failed]
    rate = sum(1 for r in valid if r.correct) / len(valid) if valid else None
    out: dict[str, Any] = {"n": n, "valid": len(valid), "failed": n - len(valid)}
    if mode == "turing":
        out.update(accuracy=rate, fooling_rate=None if rate is None else 1 - rate)
    else:
        out["win_rate"] = rate
    return out


def ab_summary(mode: str, judgments: Iterable[JudgmentRow | Mapping[str, Any]],
               counts: Mapping[str, int]) -> dict[str, Any]:
    """Turing accuracy and fooling rate (judge picked the prediction), or reference win rate.

    ``correct`` means the judge picked the real output (Turing) or the world model (reference).
    """
    by_domain: dict[str, list[JudgmentRow]] = defaultdict(list)
    for row in map(as_judgment, judgments):
        if row.mode == mode:
            by_domain[row.domain].append(row)
    domains = {d: _ab_rates(by_domain[d], counts[d], mode) for d in report_order(counts)}
    every = [r for rows in by_domain.values() for r in rows]
    return {"domains": domains, "overall": _ab_rates(every, sum(counts.values()), mode)}


def rule_means(rows: Iterable[RuleRow | Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Per-domain means of every numeric field of the rule scores (booleans as 0/100, None skipped)."""
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in map(as_rule, rows):
        for key, value in row.rule.items():
            if isinstance(value, bool):
                values[row.domain][key].append(100.0 if value else 0.0)
            elif isinstance(value, int | float):
                values[row.domain][key].append(float(value))
    return {d: {k: mean(v) for k, v in values[d].items()} for d in report_order(values)}


def _domain_score(n: int, preds: list[PredictionRow], judged: list[JudgmentRow]) -> DomainScore:
    valid = [r for r in judged if not r.failed]
    dims = rubric_dims([{**r.scores, "total_score": r.total_score} for r in valid if r.mode == "rubric"])
    return DomainScore(
        n=n, valid=len(valid), failed=n - len(valid), **dims,
        truncated=sum(1 for r in preds if r.truncated),
        no_generation=sum(1 for r in preds if r.no_generation),
        judge_failures=sum(1 for r in judged if r.judge_failure),
        prediction_errors=sum(1 for r in preds if r.error),
        tokens={"model_prompt": sum(r.usage.prompt_tokens for r in preds),
                "model_completion": sum(r.usage.completion_tokens for r in preds),
                "judge_prompt": sum(r.usage.prompt_tokens for r in judged),
                "judge_completion": sum(r.usage.completion_tokens for r in judged)},
        latency_s={"model": sum(r.latency_s for r in preds), "judge": sum(r.latency_s for r in judged)})


def score_rows(counts: Mapping[str, int], predictions: Iterable[PredictionRow | Mapping[str, Any]],
               judgments: Iterable[JudgmentRow | Mapping[str, Any]],
               rules: Iterable[RuleRow | Mapping[str, Any]] = (),
               *, samples: Sequence[BenchSample] = (), **meta: dict[str, Any]) -> ScoreReport:
    """The report of a run from its journal rows; ``counts`` = samples per domain in the run.

    Rows are records or their JSON (validated here). With ``samples`` (the run's samples, ground
    truth included) the rule tier is also put beside the trivial baselines (``rule_tier``);
    without them only its means (``rules``) are reported.
    """
    preds: dict[str, list[PredictionRow]] = defaultdict(list)
    judged: dict[str, list[JudgmentRow]] = defaultdict(list)
    for pred in map(as_prediction, predictions):
        preds[pred.domain].append(pred)
    judged_rows = [as_judgment(r) for r in judgments]
    rule_rows = [as_rule(r) for r in rules]
    for row in judged_rows:
        judged[row.domain].append(row)
    domains = {d: _domain_score(counts[d], preds[d], judged[d]) for d in report_order(counts)}
    totals = [r.rubric_total for r in judged_rows if r.rubric_total is not None]
    modes = {r.mode for r in judged_rows}
    ab = {mode: ab_summary(mode, judged_rows, counts) for mode in ("turing", "reference") if mode in modes}
    return ScoreReport(domains=domains, overall=overall(domains, totals), rules=rule_means(rule_rows),
                       rule_tier=rule_tier(samples, rule_rows, judged_rows),
                       turing=ab.get("turing"), reference=ab.get("reference"), **meta)


def score_run_rows(run_dir: Path, samples: list[BenchSample], meta: dict[str, dict[str, Any]]) -> ScoreReport:
    """Score the journals of ``run_dir`` restricted to ``samples`` (the run's sample set)."""
    ids = {s.id for s in samples}
    counts = Counter(s.domain for s in samples)
    folder = RunFolder(run_dir)
    return score_rows(counts, [r for r in folder.predictions().values() if r.id in ids],
                      [r for r in folder.judgments().values() if r.id in ids],
                      [r for r in folder.rules().values() if r.id in ids], samples=samples, **meta)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


RUBRIC_TITLE = "AgentWorldBench rubric scores (0-100)"
RULES_TITLE = "Rule tier, no judge (0-100; exact = % of samples matching exactly)"
RUBRIC_HEAD = ("Domain", "Valid/N", *(d.capitalize() for d in SCORE_DIMENSIONS), "Total", "Trunc", "NoGen",
               "PredErr", "JudgeFail")
RULE_COLUMNS = ("exact", "line_f1", "deterministic", "metadata_valid", "structure", "overall")
TIER_TITLE = ("Rule tier against trivial baselines (rule overall 0-100, same samples; "
              "skill over b = (model - b) / (100 - b); strongest = the best baseline)")
TIER_HEAD = ("Domain", "N", "model", *BASELINES, "strongest", "skill_over_frame_only", "skill_over_strongest")
SPEARMAN_HEAD = "rule_rubric_spearman(n)"


def _judged(report: ScoreReport) -> bool:
    """Whether to show the rubric: without a judge every sample would read as "failed", which says
    nothing about the world model."""
    domains = report.domains.values()
    return bool(report.judge.get("model")) or any(d.valid or d.judge_failures for d in domains)


def _rubric_rows(report: ScoreReport) -> list[list[str]]:
    return [[name, f"{d.valid}/{d.n}", *(_fmt(getattr(d, f)) for f in SCORE_FIELDS), str(d.truncated),
             str(d.no_generation), str(d.prediction_errors), str(d.judge_failures)]
            for name, d in report.domains.items()]


def _rule_rows(report: ScoreReport) -> list[list[str]]:
    return [[name, str(report.domains[name].n if name in report.domains else 0),
             *(_fmt(means.get(c)) for c in RULE_COLUMNS)] for name, means in report.rules.items()]


def _tier_table(tier: RuleTier) -> tuple[list[str], list[list[str]]]:
    """Head and rows of the baseline table; the Spearman column only when the run has a rubric."""
    calibrated = any(line.rule_rubric_spearman is not None for line in tier.domains.values())
    head = [*TIER_HEAD, *([SPEARMAN_HEAD] if calibrated else [])]
    rows = []
    for name, line in [*tier.domains.items(), ("overall", tier.overall)]:
        row = [name, str(line.n), _fmt(line.overall), *(_fmt(line.baselines.get(b)) for b in BASELINES),
               _fmt(line.strongest), _fmt(line.skill_over_frame_only), _fmt(line.skill_over_strongest)]
        if calibrated:
            corr = line.rule_rubric_spearman
            row.append("-" if corr is None else f"{_fmt(corr.rho)}({corr.n})")
        rows.append(row)
    return head, rows


def _summary(report: ScoreReport) -> list[str]:
    """The lines under the rubric table (or instead of it), and the A/B rates."""
    if _judged(report):
        o = report.overall
        lines = [f"Overall (domain mean, as published): {_fmt(o.domain_mean)}",
                 f"Overall (sample-weighted, as the official script prints): {_fmt(o.sample_weighted)}",
                 f"Samples: {o.n}, valid: {o.valid}, failed: {o.failed}"]
    else:
        n = sum(d.n for d in report.domains.values())
        errors = sum(d.prediction_errors for d in report.domains.values())
        truncated = sum(d.truncated for d in report.domains.values())
        lines = [f"No judge configured: rubric not scored. Samples: {n}, prediction errors: {errors}, "
                 f"truncated: {truncated}"]
    for mode, key in (("turing", "fooling_rate"), ("reference", "win_rate")):
        summary = getattr(report, mode)
        if summary:
            rate = summary["overall"].get(key)
            lines.append(f"{mode}: {key} {_fmt(None if rate is None else rate * 100)}% "
                         f"({summary['overall']['valid']}/{summary['overall']['n']} judged)")
    return lines


def render_text(report: ScoreReport) -> str:
    """The score tables in plain text at full width: what is printed when stdout is not a terminal
    (CI logs, ``| tee``), where a terminal-width table would cut columns."""
    lines: list[str] = []
    if _judged(report):
        lines += [*text_table(RUBRIC_HEAD, _rubric_rows(report), title=RUBRIC_TITLE), ""]
    lines += _summary(report)
    if report.rules:
        lines += ["", *text_table(("Domain", "N", *RULE_COLUMNS), _rule_rows(report), title=RULES_TITLE)]
    if report.rule_tier:
        lines += ["", *text_table(*_tier_table(report.rule_tier), title=TIER_TITLE)]
    return "\n".join(lines)


def render(report: ScoreReport, console: Any) -> None:
    """Print the score tables on a rich console (2 decimals here only; ``scores.json`` keeps full
    precision): rich tables on a terminal, :func:`render_text` elsewhere."""
    if not console.is_terminal:
        console.print(render_text(report), markup=False, highlight=False, emoji=False, soft_wrap=True)
        return
    from rich.table import Table

    def table(title: str, head: Sequence[str], rows: list[list[str]]) -> Table:
        out = Table(title=title)
        for col in head:
            out.add_column(col, justify="left" if col == "Domain" else "right")
        for row in rows:
            out.add_row(*row)
        return out

    if _judged(report):
        console.print(table(RUBRIC_TITLE, RUBRIC_HEAD, _rubric_rows(report)))
    for line in _summary(report):
        console.print(line, markup=False, highlight=False)
    if report.rules:
        console.print(table(RULES_TITLE, ("Domain", "N", *RULE_COLUMNS), _rule_rows(report)))
    if report.rule_tier:
        console.print(table(TIER_TITLE, *_tier_table(report.rule_tier)))

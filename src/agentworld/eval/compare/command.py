"""``agentworld eval compare``: several run folders over the same samples, side by side, with intervals.

Why per-sample pairs: prompt variants, planner settings and checkpoints are judged by whether a
difference of a few points is real. Each run's score is a mean over samples; two runs over the same
samples give one difference per sample, and the mean of those differences, with a paired bootstrap
interval (:mod:`agentworld.eval.compare.stats`), says whether the change beats the noise. Only
samples present and scored in both runs are paired; the others are counted by reason, never hidden.

Metrics: the rubric total and its five dimensions (0–100, as ``eval score`` reports them; only when
both runs were judged) and the rule tier's overall, exact, line F1 and structure (judge-free).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from statistics import fmean
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, computed_field

from agentworld.eval.compare.config import ALL_DOMAINS, HEADLINE, METRICS, CompareConfig, Pair

if TYPE_CHECKING:
    from agentworld.eval.compare.runs import LoadedRun


class MetricRow(BaseModel):
    """One line of the table: a run against the baseline on one metric in one domain (or all)."""

    model_config = ConfigDict(frozen=True)

    run: str
    baseline: str
    domain: str
    metric: str
    n: int
    """Samples paired (present and scored in both runs)."""
    dropped: int
    drop_reasons: dict[str, int] = Field(default_factory=dict)
    baseline_mean: float | None = None
    run_mean: float | None = None
    diff: float | None = None
    """Mean of the per-sample differences (run − baseline); for ``all``, the mean of the domains'."""
    ci_low: float | None = None
    ci_high: float | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def verdict(self) -> str:
        """``higher``/``lower`` when the interval excludes zero, else ``-`` (no difference shown)."""
        if self.ci_low is not None and self.ci_low > 0:
            return "higher"
        if self.ci_high is not None and self.ci_high < 0:
            return "lower"
        return "-"


class SampleDiff(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    domain: str
    metric: str
    run: str
    baseline_value: float
    run_value: float
    diff: float


class Comparison(BaseModel):
    """What ``eval compare --json`` prints and the HTML page shows."""

    model_config = ConfigDict(frozen=True)

    runs: list[dict[str, Any]]
    baseline: str
    resamples: int
    confidence: float
    seed: int
    rows: list[MetricRow]
    samples: list[SampleDiff] = Field(default_factory=list)
    """Per-sample differences of the headline metrics (rubric total, rule overall)."""
    warnings: list[str] = Field(default_factory=list)


def _pairs(runs: tuple[LoadedRun, LoadedRun], ids: Sequence[str],
           metric: str) -> tuple[list[Pair], Counter[str]]:
    """The (id, baseline, run) values of samples scored in both, and the drop reasons of the rest."""
    base, other = runs
    pairs, dropped = [], Counter[str]()
    for sid in ids:
        a, b = base.value(sid, metric), other.value(sid, metric)
        if isinstance(a, float) and isinstance(b, float):
            pairs.append((sid, a, b))
        else:
            reasons = [f"{why} in {run.label}" for why, run in ((a, base), (b, other))
                       if isinstance(why, str)]
            dropped[" and ".join(reasons)] += 1
    return pairs, dropped


def _row(base: LoadedRun, run: LoadedRun, domain: str, metric: str, pairs: list[Pair],
         dropped: Counter[str], interval: tuple[float, float] | None) -> MetricRow:
    a = fmean(p[1] for p in pairs) if pairs else None
    b = fmean(p[2] for p in pairs) if pairs else None
    return MetricRow(run=run.label, baseline=base.label, domain=domain, metric=metric, n=len(pairs),
                     dropped=sum(dropped.values()), drop_reasons=dict(dropped.most_common()),
                     baseline_mean=a, run_mean=b, diff=None if a is None or b is None else b - a,
                     ci_low=interval[0] if interval else None, ci_high=interval[1] if interval else None)


def _tiers(base: LoadedRun, run: LoadedRun, warnings: list[str]) -> set[str]:
    """The tiers both runs have ("rubric": judgments, "rule": rule scores); a warning for a tier one lacks."""
    tiers = set()
    for tier, what, has in (("rubric", "judgments", lambda r: bool(r.judgments)),
                            ("rule", "rule scores", lambda r: bool(r.rules))):
        lacking = [r.label for r in (base, run) if not has(r)]
        if not lacking:
            tiers.add(tier)
        elif len(lacking) == 1:
            warnings.append(f"{lacking[0]} has no {what}: the {tier} tier of {run.label} vs {base.label} is "
                            "not compared")
    if not tiers:
        warnings.append(f"{run.label} vs {base.label}: no tier is scored in both runs; nothing compared")
    return tiers


def compare(config: CompareConfig) -> Comparison:
    """Load, check and pair the runs; one row per run × metric × domain (then ``all``).

    Raises:
        AgentWorldError: fewer than two runs, a folder that is not a run, runs over different data,
            runs sharing no sample, or an unknown ``--baseline``.
    """
    from agentworld.domains import report_order
    from agentworld.eval.compare.runs import check_same_data, check_same_samples, load_runs, pick_baseline
    from agentworld.eval.compare.stats import paired_bootstrap, stratified_bootstrap

    runs = load_runs(config.run)
    base = pick_baseline(runs, config.baseline)
    warnings = check_same_data(runs, config.allow_different_data) + check_same_samples(runs)
    domain_of: dict[str, str] = {}
    for run in runs:
        domain_of.update({sid: p.domain for sid, p in run.predictions.items() if sid not in domain_of})
    present = set(domain_of.values())
    domains = report_order(present)
    ids = {d: sorted(sid for sid, dom in domain_of.items() if dom == d) for d in domains}
    options: dict[str, Any] = {"resamples": config.bootstrap, "confidence": config.confidence,
                               "seed": config.seed}
    rows: list[MetricRow] = []
    samples: list[SampleDiff] = []
    for run in (r for r in runs if r is not base):
        tiers = _tiers(base, run, warnings)
        for metric in config.metrics or METRICS:
            if metric.split(".")[0] not in tiers:
                continue
            per_domain, total = [], Counter[str]()
            for domain in domains:
                pairs, dropped = _pairs((base, run), ids[domain], metric)
                diffs = [b - a for _, a, b in pairs]
                interval = paired_bootstrap(diffs, **options)
                rows.append(_row(base, run, domain, metric, pairs, dropped, interval))
                per_domain.append(pairs)
                total += dropped
                if metric in HEADLINE:
                    samples += [SampleDiff(id=sid, domain=domain, metric=metric, run=run.label,
                                           baseline_value=a, run_value=b, diff=b - a) for sid, a, b in pairs]
            if len(domains) > 1:
                rows.append(_overall(base, run, metric, rows[-len(domains):], per_domain, total,
                                     stratified_bootstrap([[b - a for _, a, b in p] for p in per_domain],
                                                          **options)))
    return Comparison(runs=[r.describe() for r in runs], baseline=base.label, rows=rows, samples=samples,
                      warnings=warnings, **options)


def _overall(base: LoadedRun, run: LoadedRun, metric: str, domain_rows: list[MetricRow],
             per_domain: list[list[Pair]], dropped: Counter[str],
             interval: tuple[float, float] | None) -> MetricRow:
    """The ``all`` row: means of the domains' means (the published "Overall"), over domains with pairs."""
    kept = [row for row in domain_rows if row.n]

    def mean_of(field: str) -> float | None:
        return fmean(getattr(row, field) for row in kept) if kept else None

    return MetricRow(run=run.label, baseline=base.label, domain=ALL_DOMAINS, metric=metric,
                     n=sum(len(p) for p in per_domain), dropped=sum(dropped.values()),
                     drop_reasons=dict(dropped.most_common()), baseline_mean=mean_of("baseline_mean"),
                     run_mean=mean_of("run_mean"), diff=mean_of("diff"),
                     ci_low=interval[0] if interval else None, ci_high=interval[1] if interval else None)


def run_compare(config: CompareConfig) -> None:
    """The command's body: compare, print (table or JSON), write the HTML page when asked."""
    import typer

    from agentworld.eval.compare.render import print_comparison, write_html

    result = compare(config)
    for warning in result.warnings:
        typer.secho(f"warning: {warning}", fg=typer.colors.YELLOW, err=True)
    if config.as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        print_comparison(result)
    if config.html is not None:
        typer.echo(f"wrote {write_html(result, config.html)}", err=config.as_json)

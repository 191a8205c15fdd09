"""The comparison on a terminal (rich tables; full-width plain text in a pipe) and as one HTML page.

The page is drawn in the shared report style (:mod:`agentworld.report_style`), has no external assets,
is written atomically, and escapes every piece of data: run labels and sample ids come from folders
and files someone else may have written.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from agentworld.eval.compare.command import Comparison, MetricRow, SampleDiff
from agentworld.eval.compare.config import ALL_DOMAINS
from agentworld.io import atomic_write_text
from agentworld.report_style import escape as e
from agentworld.report_style import html_table, page, text_table

HEAD = ("Domain", "Metric", "N", "Dropped", "Baseline", "Run", "Diff", "CI", "Verdict")
MIN_SHOWN_DIFF = 1e-9


def _fmt(value: float | None, sign: bool = False) -> str:
    return "-" if value is None else f"{value:+.2f}" if sign else f"{value:.2f}"


def _ci(row: MetricRow) -> str:
    return "-" if row.ci_low is None or row.ci_high is None else f"[{row.ci_low:+.2f}, {row.ci_high:+.2f}]"


def _cells(row: MetricRow) -> list[str]:
    return [row.domain, row.metric, str(row.n), str(row.dropped), _fmt(row.baseline_mean), _fmt(row.run_mean),
            _fmt(row.diff, sign=True), _ci(row), row.verdict]


def _title(result: Comparison, run: str) -> str:
    return (f"{run} vs {result.baseline}: mean paired difference (run - baseline, 0-100) with "
            f"{result.confidence:.0%} bootstrap interval ({result.resamples} resamples, seed {result.seed})")


def _compared(result: Comparison) -> list[str]:
    return list(dict.fromkeys(row.run for row in result.rows))


def _drop_lines(result: Comparison, run: str) -> list[str]:
    """Why samples were left out, per metric tier: from the widest row of each metric, deduplicated."""
    lines: list[str] = []
    rows = [r for r in result.rows if r.run == run]
    widest = {r.metric: r for r in rows if r.domain == ALL_DOMAINS} or {r.metric: r for r in rows}
    for metric, row in widest.items():
        if row.dropped:
            reasons = "; ".join(f"{why}: {count}" for why, count in row.drop_reasons.items())
            line = f"{row.dropped} dropped ({reasons})"
            if line not in (x.split(": ", 1)[1] for x in lines):
                lines.append(f"{metric}: {line}")
    return lines


def render_text(result: Comparison) -> str:
    """Every table at full width, for a pipe or a CI log (a terminal-width table would cut columns)."""
    lines: list[str] = []
    for run in _compared(result):
        rows = [_cells(r) for r in result.rows if r.run == run]
        lines += [*text_table(HEAD, rows, title=_title(result, run)), *_drop_lines(result, run), ""]
    return "\n".join(lines).rstrip()


def print_comparison(result: Comparison) -> None:
    """The tables on stdout: rich on a terminal, plain text at full width elsewhere."""
    import typer

    if not sys.stdout.isatty():
        typer.echo(render_text(result))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for run in _compared(result):
        table = Table(title=_title(result, run))
        for col in HEAD:
            table.add_column(col, justify="left" if col in ("Domain", "Metric", "Verdict") else "right")
        for row in (r for r in result.rows if r.run == run):
            style = {"higher": "green", "lower": "red"}.get(row.verdict)
            table.add_row(*_cells(row), style=style)
        console.print(table)
        for line in _drop_lines(result, run):
            console.print(line, markup=False, highlight=False)


def forest_plot(rows: Sequence[MetricRow]) -> str:
    """Inline SVG: each row's mean difference as a dot and its interval as a bar, around a zero line."""
    shown = [r for r in rows if r.diff is not None]
    if not shown:
        return '<p class="note">No paired samples.</p>'
    ends = [abs(v) for r in shown for v in (r.diff, r.ci_low, r.ci_high) if v is not None]
    extent = max(MIN_SHOWN_DIFF, *ends)
    label_w, plot_w, row_h, top = 230, 420, 22, 22
    height = top + row_h * len(shown) + 10

    def x(value: float) -> float:
        return label_w + plot_w / 2 + value / extent * plot_w / 2 * 0.95

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + plot_w + 10}" height="{height}" '
           'role="img" aria-label="mean differences with intervals" font-family="system-ui" font-size="11">',
           f'<line x1="{x(0):.1f}" x2="{x(0):.1f}" y1="{top - 6}" y2="{height - 6}" stroke="#888"/>',
           f'<text x="{x(0):.1f}" y="{top - 10}" text-anchor="middle" fill="#666">0</text>',
           f'<text x="{x(-extent):.1f}" y="{top - 10}" fill="#666">{-extent:+.1f}</text>',
           f'<text x="{x(extent):.1f}" y="{top - 10}" text-anchor="end" fill="#666">{extent:+.1f}</text>']
    for i, row in enumerate(shown):
        y = top + i * row_h + row_h / 2
        color = {"higher": "#27ae60", "lower": "#c0392b"}.get(row.verdict, "#555")
        out.append(f'<text x="{label_w - 6}" y="{y + 4}" text-anchor="end">{e(row.domain)} · '
                   f"{e(row.metric)}</text>")
        if row.ci_low is not None and row.ci_high is not None:
            out.append(f'<line x1="{x(row.ci_low):.1f}" x2="{x(row.ci_high):.1f}" y1="{y}" y2="{y}" '
                       f'stroke="{color}" stroke-width="3"/>')
        assert row.diff is not None
        out.append(f'<circle cx="{x(row.diff):.1f}" cy="{y}" r="4" fill="{color}"><title>{e(row.metric)} '
                   f"{e(row.domain)}: {row.diff:+.2f} {e(_ci(row))}</title></circle>")
    return "".join(out) + "</svg>"


def _runs_table(result: Comparison) -> str:
    head = ["run", "model", "model URL", "temperature", "judge", "data", "samples", "folder"]
    rows = [[str(r.get(k) if r.get(k) is not None else "-") for k in
             ("label", "model", "model_base_url", "temperature", "judge_model")]
            + [", ".join(r.get("data") or []), str(r.get("samples", 0)), str(r.get("path"))]
            for r in result.runs]
    for row in rows:
        if row[0] == result.baseline:
            row[0] += " (baseline)"
    return html_table(head, rows, left=range(8))


def _sample_table(diffs: list[SampleDiff]) -> str:
    """Per-sample differences of one metric, largest drop first (where to look for regressions)."""
    ordered = sorted(diffs, key=lambda d: (d.diff, d.id))
    rows = [[d.id, d.domain, _fmt(d.baseline_value), _fmt(d.run_value), _fmt(d.diff, sign=True)]
            for d in ordered]
    return html_table(["sample", "domain", "baseline", "run", "diff"], rows, left=[1])


def _section(result: Comparison, run: str) -> str:
    rows = [r for r in result.rows if r.run == run]
    widest = [r for r in rows if r.domain == ALL_DOMAINS] or rows
    note = (f"Mean of per-sample differences (run − baseline, 0–100) over the samples scored in both runs; "
            f"{result.confidence:.0%} paired bootstrap interval, {result.resamples} resamples, seed "
            f"{result.seed}. “all” is the mean of the domains (the published Overall), resampled within "
            "each domain.")
    parts = [f"<h2>{e(run)} vs {e(result.baseline)}</h2>", '<div class="card">', forest_plot(widest),
             f'</div><p class="note">{e(note)}</p>', html_table(HEAD, [_cells(r) for r in rows], left=[1, 8])]
    drops = _drop_lines(result, run)
    if drops:
        items = "".join(f"<li>{e(line)}</li>" for line in drops)
        parts.append(f"<p>Samples left out:</p><ul>{items}</ul>")
    for metric in dict.fromkeys(d.metric for d in result.samples if d.run == run):
        diffs = [d for d in result.samples if d.run == run and d.metric == metric]
        changed = sum(1 for d in diffs if abs(d.diff) > MIN_SHOWN_DIFF)
        parts.append(f'<details class="s"><summary>{e(metric)} per sample: {len(diffs)} pairs, {changed} '
                     f"differ</summary>{_sample_table(diffs)}</details>")
    return "".join(parts)


def write_html(result: Comparison, out: Path) -> Path:
    """Write the comparison page to ``out`` atomically (an existing file is replaced whole or not at all)."""
    warnings = "".join(f'<p class="note">warning: {e(w)}</p>' for w in result.warnings)
    body = [_runs_table(result), warnings, *(_section(result, run) for run in _compared(result))]
    title = " vs ".join(str(r.get("label")) for r in result.runs)
    html = page("eval compare", f"World-model comparison: {title}", body,
                meta=[("baseline", result.baseline)])
    atomic_write_text(out, html)
    return out

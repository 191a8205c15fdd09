"""What ``eval probes`` reports: accuracy per category and domain (and per gap of the long-context
probes), as JSON, a terminal table and one self-contained HTML page in the shared report style."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentworld.domains.probes import CATEGORIES, Probe
from agentworld.eval.probes.config import ProbeResult
from agentworld.io import atomic_write_text
from agentworld.report_style import FILTER_JS, filter_bar, html_table, page, text_table
from agentworld.report_style import escape as e


def _score(results: list[ProbeResult]) -> dict[str, Any]:
    n = len(results)
    passed = sum(r.passed for r in results)
    return {"n": n, "passed": passed, "accuracy": round(100 * passed / n, 2) if n else None,
            "errors": sum(r.error is not None for r in results)}


def _group(results: Iterable[ProbeResult], key: Any) -> dict[Any, list[ProbeResult]]:
    groups: dict[Any, list[ProbeResult]] = defaultdict(list)
    for r in results:
        groups[key(r)].append(r)
    return groups


def summarize(results: list[ProbeResult], settings: dict[str, Any], sent: int = 0) -> dict[str, Any]:
    """``report.json``: overall, per category, per domain, per domain and category, per context gap.

    A probe whose request failed counts as failed (and under ``errors``): a model that cannot answer
    a probe has not passed it.
    """
    domains = sorted({r.domain for r in results})
    by_cell = _group(results, lambda r: (r.domain, r.category))
    gaps = _group((r for r in results if r.gap is not None), lambda r: r.gap)
    return {
        "settings": settings, "sent_this_run": sent, "overall": _score(results),
        "categories": {c: _score([r for r in results if r.category == c]) for c in CATEGORIES},
        "domains": {d: {"overall": _score([r for r in results if r.domain == d]),
                        **{c: _score(by_cell.get((d, c), [])) for c in CATEGORIES}} for d in domains},
        "long_context_by_gap": {str(g): _score(gaps[g]) for g in sorted(gaps)},
    }


def _pct(cell: dict[str, Any]) -> str:
    return "–" if cell.get("accuracy") is None else f"{cell['accuracy']:.1f}% ({cell['passed']}/{cell['n']})"


def table_rows(report: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header and rows: one row per domain and one for all, a column per category and overall."""
    head = ["domain", *CATEGORIES, "overall"]
    rows = [[d, *(_pct(v[c]) for c in CATEGORIES), _pct(v["overall"])] for d, v in report["domains"].items()]
    rows.append(["all", *(_pct(report["categories"][c]) for c in CATEGORIES), _pct(report["overall"])])
    return head, rows


def _footer(report: dict[str, Any]) -> list[str]:
    gaps = ", ".join(f"{g} turns {_pct(v)}" for g, v in report["long_context_by_gap"].items())
    errors = report["overall"]["errors"]
    lines = [f"long context by gap: {gaps}" if gaps else "",
             f"{errors} probe(s) without an answer (request failed), counted as failed" if errors else ""]
    return [line for line in lines if line]


def render_text(report: dict[str, Any]) -> str:
    """The table as plain text (pipes, logs), plus the long-context accuracy per gap."""
    head, rows = table_rows(report)
    return "\n".join(text_table(head, rows) + _footer(report))


def render_rich(report: dict[str, Any]) -> None:
    """The table with rich, on a terminal."""
    from rich.console import Console
    from rich.table import Table

    head, rows = table_rows(report)
    table = Table(title="World-model probes: accuracy by rule")
    for name in head:
        table.add_column(name, justify="left" if name == "domain" else "right")
    for row in rows:
        table.add_row(*row)
    console = Console()
    console.print(table)
    for line in _footer(report):
        console.print(line)


def _view(probe: Probe, result: ProbeResult, prediction: str) -> str:
    from agentworld.eval.report import diff_table

    badge = ('<span class="badge b-ok">pass</span>' if result.passed
             else '<span class="badge b-fail">fail</span>')
    checks = "".join(f"<li>{'✗' if c.describe() in result.failed_checks else '✓'} {e(c.describe())}</li>"
                     for c in probe.checks)
    note = f'<p class="note">request failed: {e(result.error)}</p>' if result.error else ""
    return (f'<details class="s" data-domain="{e(probe.domain)}" data-problem="{int(not result.passed)}">'
            f"<summary>{e(probe.id)}{badge}<span class=\"badge b-dom\">{e(probe.category)}</span></summary>"
            f"{note}<ul>{checks}</ul>{diff_table(prediction, probe.expected)}</details>")


def write_html(out: Path, probes: list[Probe], results: list[ProbeResult], report: dict[str, Any]) -> Path:
    """``OUT/report.html``: the table, long-context accuracy per gap, and every probe with its checks
    and its prediction against the expected observation."""
    from agentworld.eval.probes.command import predictions

    preds = predictions(out / "predictions.jsonl")
    by_id = {r.id: r for r in results}
    head, rows = table_rows(report)
    gap_rows = [[f"{g} turns", _pct(v)] for g, v in report["long_context_by_gap"].items()]
    settings = report["settings"]
    views = [_view(p, by_id[p.id], preds[p.id].prediction if p.id in preds else "") for p in probes]
    parts = ["<h2>Accuracy by domain and category</h2>", html_table(head, rows),
             "<h2>Long-context consistency by gap</h2>", html_table(["gap", "accuracy"], gap_rows),
             f'<h2>Probes (<span id="shown">{len(views)}</span> shown)</h2>',
             filter_bar(report["domains"], only_failures=True), *views]
    html = page("eval probes", "World-model probes", parts, script=FILTER_JS,
                meta=[("model", settings.get("model")), ("seed", settings.get("seed")),
                      ("variants", settings.get("variants"))])
    path = out / "report.html"
    atomic_write_text(path, html)
    return path

"""The HTML page of ``eval closed-loop``: the summary per domain and arm, and every task's two episodes.

Styled like ``eval report`` (its CSS and side-by-side diff), self-contained, every piece of data
HTML-escaped. Per task and arm: where the actions diverged, whether the outcomes agree, and each
simulated observation beside the real environment's answer to the same action.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from agentworld.eval.closedloop.score import COLUMNS, table_rows
from agentworld.eval.report import CSS, diff_table
from agentworld.io import atomic_write_text

e = html.escape


def _table(head: list[str], rows: list[list[str]]) -> str:
    cells = "".join(f"<tr>{''.join(f'<td>{e(c)}</td>' for c in row)}</tr>" for row in rows)
    return f'<table class="t"><tr>{"".join(f"<th>{e(h)}</th>" for h in head)}</tr>{cells}</table>'


def _task(row: dict[str, Any]) -> str:
    agree = row["agree"]
    badge = (f'<span class="badge {"b-ok" if agree else "b-fail"}">outcome '
             f'{"agrees" if agree else "differs"}: real {"ok" if row["real_success"] else "failed"}, sim '
             f'{"ok" if row["sim_success"] else "failed"}</span>')
    div = row["first_divergence"]
    badge += (f'<span class="badge b-trunc">actions diverge at turn {div}</span>' if div is not None
              else '<span class="badge b-ok">no divergence</span>')
    fid = "-" if row["fidelity"] is None else f'{row["fidelity"]:.1f}'
    steps = "".join(
        f'<div class="note" style="padding:4px 10px">turn {e(str(s["turn"]))} · rule {s["rule"]:.1f}'
        + (f' · rubric {s["rubric"]:.1f}' if s.get("rubric") is not None else "")
        + f'</div><pre style="margin:0 10px">{e(s["action"])}</pre>'
        + diff_table(s["simulated"], s["real"]).replace("<th>prediction</th><th>ground truth</th>",
                                                        "<th>simulator</th><th>real environment</th>")
        for s in row["steps"])
    return (f'<details class="s" data-domain="{e(row["domain"])}"><summary>{e(row["task"])} '
            f'<span class="badge b-dom">{e(row["domain"])}</span>'
            f'<span class="badge b-dom">{e(row["arm"])}</span>'
            f'{badge} <span class="note">rule fidelity {fid} · real steps {row["real_steps"]}, simulated '
            f'{row["sim_steps"]}</span></summary>{steps}</details>')


def render_html(report: dict[str, Any]) -> str:
    """The page for a closed-loop ``report.json``."""
    meta = (f'<b>agent</b> {e(str(report["agent"]))} · <b>world model</b> {e(str(report["model"]))} · '
            f'<b>judge</b> {e(str(report["judge"] or "-"))} · <b>seed</b> {report["seed"]} · <b>tasks</b> '
            f'{report["tasks_finished"]} of {report["tasks_planned"]}')
    note = ("Agree%: tasks whose check gives the same outcome in the real environment and in the simulator. "
            "Diverged: tasks whose agent actions differ (1stDiv: mean first turn). Rule/Rubric: mean "
            "fidelity of each simulated observation against the real environment's answer to the same "
            "action. "
            "Routed%: simulated steps the router ran for real.")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>closed-loop sim-to-real gap</title>"
            f"<style>{CSS}</style></head><body><h1>Closed-loop sim-to-real gap</h1>"
            f'<div class="meta">{meta}</div><h2>Per domain and arm</h2>'
            f'{_table([name for name, _ in COLUMNS], table_rows(report["summary"]))}'
            f'<p class="note">{e(note)}</p><h2>Tasks</h2>'
            + "".join(_task(row) for row in report["tasks"]) + "</body></html>")


def write_html(report: dict[str, Any], out: Path) -> Path:
    """Write the page atomically; returns its path."""
    atomic_write_text(out, render_html(report))
    return out

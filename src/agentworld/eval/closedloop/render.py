"""The HTML page of ``eval closed-loop``: the summary per domain and arm, and every task's two episodes.

In the shared report style with ``eval report``'s side-by-side diff, self-contained, every piece of data
HTML-escaped. Per task and arm: where the actions diverged, whether the outcomes agree, and each
simulated observation beside the real environment's answer to the same action.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentworld.eval.closedloop.score import COLUMNS, table_rows
from agentworld.eval.report import diff_table
from agentworld.io import atomic_write_text
from agentworld.report_style import escape as e
from agentworld.report_style import html_table, page


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
    tasks = f'{report["tasks_finished"]} of {report["tasks_planned"]}'
    meta = [("agent", report["agent"]), ("world model", report["model"]),
            ("judge", report["judge"] or "none"), ("seed", report["seed"]), ("tasks", tasks)]
    note = ("Agree%: tasks whose check gives the same outcome in the real environment and in the simulator. "
            "Diverged: tasks whose agent actions differ (1stDiv: mean first turn). Rule/Rubric: mean "
            "fidelity of each simulated observation against the real environment's answer to the same "
            "action. "
            "Routed%: simulated steps the router ran for real.")
    body = ["<h2>Per domain and arm</h2>",
            html_table([name for name, _ in COLUMNS], table_rows(report["summary"]), left=[1]),
            f'<p class="note">{e(note)}</p><h2>Tasks</h2>', *(_task(row) for row in report["tasks"])]
    return page("eval closed-loop", "Closed-loop sim-to-real gap", body, meta=meta)


def write_html(report: dict[str, Any], out: Path) -> Path:
    """Write the page atomically; returns its path."""
    atomic_write_text(out, render_html(report))
    return out

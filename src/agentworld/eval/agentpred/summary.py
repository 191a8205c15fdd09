"""The summary of ``eval agent-predictions``: per domain, the agent's rule score beside trivial baselines.

Why baselines beside it: a terminal prediction that only repeats the command and the prompt already
earns part of the frame, so the agent's mean rule score is shown next to what an empty prediction and
"repeat the previous observation" score on the very same real steps.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from statistics import fmean
from typing import Any

from pydantic import BaseModel, ConfigDict

from agentworld.eval.agentpred.episode import BASELINE_NAMES
from agentworld.report_style import text_table


class PredictionLine(BaseModel):
    """One domain (or all): steps, tasks, the agent's mean rule score and exact-match rate, baselines."""

    model_config = ConfigDict(frozen=True)

    steps: int
    tasks: int
    rule_overall: float
    exact_rate: float
    verified_rate: float
    unparsed: int
    """Replies without a ``<predicted_observation>`` block (scored as empty predictions)."""
    baselines: dict[str, dict[str, float]]
    """Per baseline: ``rule_overall`` and ``exact_rate`` on the same steps."""


class PredictionSummary(BaseModel):
    """What ``summary.json`` holds."""

    model_config = ConfigDict(frozen=True)

    domains: dict[str, PredictionLine]
    overall: PredictionLine | None
    tasks_closed: int
    tasks_total: int
    ended: dict[str, int]
    """How closed tasks ended: ``steps`` (fixed steps done), ``done`` (the agent said so),
    ``max_steps``, ``agent_error`` (a reply without an action), ``environment_error`` (the real
    environment failed at a step, e.g. the agent's ``exit`` ended the shell)."""


def _pct(values: list[bool]) -> float:
    return round(100.0 * sum(values) / len(values), 2)


def _line(rows: list[Mapping[str, Any]]) -> PredictionLine:
    baselines = {name: {"rule_overall": round(fmean(r["baselines"][name]["overall"] for r in rows), 2),
                        "exact_rate": _pct([r["baselines"][name]["exact"] for r in rows])}
                 for name in BASELINE_NAMES}
    return PredictionLine(steps=len(rows), tasks=len({r["task"] for r in rows}),
                          rule_overall=round(fmean(r["rule"]["overall"] for r in rows), 2),
                          exact_rate=_pct([r["rule"]["exact"] for r in rows]),
                          verified_rate=_pct([r["rule"]["verified"] for r in rows]),
                          unparsed=sum(not r["parsed"] for r in rows), baselines=baselines)


def summarise(rows: Iterable[Mapping[str, Any]], tasks_total: int) -> PredictionSummary:
    """Summarise journal rows (step rows and the tasks' closing rows; the last row of a step wins)."""
    steps: dict[tuple[str, int], Mapping[str, Any]] = {}
    closed: dict[str, str] = {}
    for row in rows:
        if "closed" in row:
            closed[row["task"]] = row["closed"]
        elif "step" in row:
            steps[(row["task"], row["step"])] = row
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in steps.values():
        groups[row["domain"]].append(row)
    ended: dict[str, int] = defaultdict(int)
    for how in closed.values():
        ended[how] += 1
    every = [r for d in sorted(groups) for r in groups[d]]
    return PredictionSummary(domains={d: _line(groups[d]) for d in sorted(groups)},
                             overall=_line(every) if every else None, tasks_closed=len(closed),
                             tasks_total=tasks_total, ended=dict(ended))


def render_text(summary: PredictionSummary) -> str:
    """A plain-text table (one row per domain, then all), readable in a pipe and in CI logs."""
    head = ["domain", "steps", "tasks", "agent rule", "exact %", "empty rule", "empty ex%", "repeat rule",
            "repeat ex%", "unparsed"]
    rows: list[list[object]] = []
    entries = list(summary.domains.items()) + ([("all", summary.overall)] if summary.overall else [])
    for name, line in entries:
        empty, repeat = line.baselines["empty"], line.baselines["repeat_previous"]
        rows.append([name, line.steps, line.tasks, f"{line.rule_overall:.2f}", f"{line.exact_rate:.2f}",
                     f"{empty['rule_overall']:.2f}", f"{empty['exact_rate']:.2f}",
                     f"{repeat['rule_overall']:.2f}", f"{repeat['exact_rate']:.2f}", line.unparsed])
    lines = text_table(head, rows)
    ended = ", ".join(f"{k} {v}" for k, v in sorted(summary.ended.items())) or "none"
    lines.append(f"tasks closed: {summary.tasks_closed}/{summary.tasks_total} (ended: {ended})")
    return "\n".join(lines)

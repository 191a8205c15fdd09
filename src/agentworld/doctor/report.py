"""Printing the doctor's findings: a verdict table per endpoint (plain text when piped), the flags
to use, or the whole report as JSON."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from agentworld.doctor.findings import EndpointReport

MARKS = {"ok": "ok", "warn": "WARN", "fail": "FAIL", "info": "-"}


def flags(reports: list[EndpointReport]) -> str:
    """The agentworld options that fit what was found (usable endpoints only; keys by environment)."""
    models = [r for r in reports if r.role == "model" and r.usable]
    judges = [r for r in reports if r.role == "judge" and r.usable]
    parts: list[str] = []
    if models:
        max_tokens = max(r.max_tokens or 0 for r in models)
        rooms = [r.room for r in models if r.room]
        if rooms:  # never advise more than the context leaves beside a prompt
            max_tokens = min(max_tokens or min(rooms), min(rooms))
        parts += ["--model-base-url", ",".join(r.url for r in models), "--model", models[0].model]
        if max_tokens:
            parts += ["--max-tokens", str(max_tokens)]
    if judges:
        parts += ["--judge-base-url", ",".join(r.url for r in judges), "--judge-model", judges[0].model]
    return " ".join(parts)


def reason(reports: list[EndpointReport]) -> str | None:
    """One line saying why the endpoints are not usable, or None when they all are."""
    failed = [r.reason for r in reports if r.reason]
    if not failed:
        return None
    pooled = any(sum(o.role == r.role for o in reports) > 1 for r in reports if r.reason)
    if len(failed) == 1 and not pooled:
        return failed[0]
    return f"{len(failed)} of {len(reports)} endpoints are not usable: " + "; ".join(failed)


def to_json(reports: list[EndpointReport]) -> dict[str, Any]:
    return {"usable": reason(reports) is None, "reason": reason(reports), "flags": flags(reports),
            "endpoints": [r.to_json() for r in reports]}


def print_reports(reports: list[EndpointReport], as_json: bool, out: TextIO | None = None) -> None:
    """Print the tables (rich on a terminal, aligned plain text otherwise) or the JSON document."""
    out = out or sys.stdout
    if as_json:
        out.write(json.dumps(to_json(reports), indent=2) + "\n")
        return
    rich = out.isatty()
    for report in reports:
        title = f"{'world model' if report.role == 'model' else 'judge'} {report.url} ({report.model})"
        rows = [(f.check, MARKS[f.status], f.detail) for f in report.findings]
        if rich:
            _rich_table(title, rows, out)
        else:
            width = max(len(r[0]) for r in rows) if rows else 0
            out.write(title + "\n")
            out.writelines(f"  {mark:<4}  {check:<{width}}  {detail}\n" for check, mark, detail in rows)
            out.write("\n")
    failed = reason(reports)
    verdict = "not usable" if failed else "usable"
    warned = any(f.status == "warn" for r in reports for f in r.findings)
    out.write(f"verdict: {verdict}{', with warnings (above)' if warned and not failed else ''}\n")
    if flags(reports):
        out.write(f"flags: {flags(reports)}\n")


def _rich_table(title: str, rows: list[tuple[str, str, str]], out: TextIO) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_header=True)
    for name in ("check", "result", "detail"):
        table.add_column(name)
    styles = {"ok": "green", "WARN": "yellow", "FAIL": "bold red", "-": "dim"}
    for check, mark, detail in rows:
        table.add_row(escape(check), f"[{styles[mark]}]{mark}[/]", escape(detail))
    Console(file=out).print(table)

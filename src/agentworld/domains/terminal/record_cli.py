"""``agentworld record terminal``: its options and run (the recorder is imported when it runs).

Example (re-creates the shipped corpus)::

    agentworld record terminal --out src/agentworld/domains/terminal/corpus.jsonl --overwrite
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agentworld.cli_support import cli_flags
from agentworld.domains.base import RecorderCommand
from agentworld.errors import AgentWorldError


class RecordTerminalOptions(BaseModel):
    """Run each scenario in a fresh sandboxed bash (bubblewrap + tmux) and write its rows to OUT."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    out: Path = Field(description="JSONL file of AgentWorldBench rows to write.",
                      json_schema_extra={"output": "file"})
    scenarios: Path | None = Field(None, description="Scenario JSON file or folder of *.json (default: the "
                                   "built-in scenarios).")
    seed: int = Field(0, description="Seed of the container hostnames (same seed, same screens).")
    resume: bool = Field(False, description="Keep OUT and record only the scenarios not complete in it.",
                         json_schema_extra=cli_flags("--resume", old=("--append",)))
    overwrite: bool = Field(False, description="Replace an existing OUT.")
    fast: bool = Field(True, description="End a wait early once the prompt is back and the screen is "
                       "stable.")
    wall_clock_s: float = Field(900.0, gt=0, description="Wall-clock limit of one terminal session, "
                                "seconds.")


def record_terminal(options: RecordTerminalOptions) -> None:
    import typer
    from rich.console import Console
    from rich.progress import TextColumn

    from agentworld.domains.terminal.record import (
        Scenario,
        builtin_scenarios_dir,
        load_scenarios,
        record_to_jsonl,
    )
    from agentworld.envs.sandbox import SandboxConfig
    from agentworld.report_style import progress
    from agentworld.schema import Trajectory

    console = Console(stderr=True)
    out = options.out
    items = load_scenarios(options.scenarios if options.scenarios is not None else builtin_scenarios_dir())
    if out.exists() and out.stat().st_size and not (options.resume or options.overwrite):
        raise AgentWorldError(f"{out} exists; pass --resume to continue it or --overwrite")
    failures: list[str] = []
    with progress(console, TextColumn("{task.fields[current]}")) as bar:
        task = bar.add_task("recording", total=len(items), current="")

        def on_start(scenario: Scenario) -> None:
            bar.update(task, current=scenario.name)

        def on_done(scenario: Scenario, traj: Trajectory | None, error: str | None) -> None:
            if error is not None:
                failures.append(error)
                bar.console.print(f"[red]failed[/] {scenario.name}: {error}")
            bar.advance(task)

        summary = record_to_jsonl(items, out, seed=options.seed, resume=options.resume,
                                  sandbox=SandboxConfig(wall_clock_s=options.wall_clock_s), fast=options.fast,
                                  on_start=on_start, on_done=on_done)
        bar.update(task, completed=len(items), current="")
    console.print(f"recorded {summary.recorded} scenario(s), {summary.rows} row(s) → {out}"
                  + (f"; skipped {summary.skipped} already recorded" if summary.skipped else ""))
    if summary.failed:
        console.print(f"[red]{len(summary.failed)} scenario(s) failed:[/] {', '.join(summary.failed)}")
        raise typer.Exit(1)


COMMAND = RecorderCommand(options=RecordTerminalOptions, run=record_terminal)

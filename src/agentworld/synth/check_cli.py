"""``agentworld synth check DIR... --out REPORT_DIR``: run the world checks, write the report.

Why a function that registers the command rather than an app of its own: ``agentworld synth`` is one
group (``synth/cli.py``), which calls :func:`register` to add ``check`` beside ``envs`` and ``world``.
Only light imports at module level (the CLI root imports this for ``--help``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from pydantic import Field

from agentworld.cli_support import config_command
from agentworld.endpoints import ModelEndpoint
from agentworld.errors import AgentWorldError
from agentworld.synth.report import CheckReport, CheckThresholds


class SynthCheckConfig(ModelEndpoint, CheckThresholds):
    """Check world folders and reject bad ones, each with its reason (report.json and report.html)."""

    out: Path = Field(description="Folder to write report.json and report.html into.",
                      json_schema_extra={"output": "folder"})
    model: str | None = Field(  # type: ignore[assignment]  # optional here: without it, static checks only
        None, description="World model for the simulator checks (reference plans, "
        "contradiction probe): the served model name with --model-base-url, else a backend name; without it "
        "only the static checks run.")
    concurrency: int = Field(8, ge=1, le=1024, description="Worlds simulated at once.")
    cache: Path | None = Field(None, description="Journal of world-model answers (JSONL): a re-run, after a "
                               "crash or with other thresholds, re-sends no request answered before.")


WORLDS = typer.Argument(..., help="World folders, or folders whose sub-folders are world folders.",
                        show_default=False)


def world_folders(paths: list[Path]) -> list[Path]:
    """The world folders named: each path itself when it holds world.json, else its sub-folders that do."""
    out: list[Path] = []
    for path in paths:
        if (path / "world.json").is_file():
            out.append(path)
        elif path.is_dir():
            inner = sorted(p for p in path.iterdir() if (p / "world.json").is_file())
            if not inner:
                raise AgentWorldError(f"{path}: no world.json in it or in any folder inside it")
            out += inner
        else:
            raise AgentWorldError(f"{path}: no such world folder")
    return out


def _check(config: SynthCheckConfig, worlds: list[Path]) -> None:
    report = check_worlds(config, world_folders(worlds))
    reasons = ", ".join(f"{k} {v}" for k, v in report.reasons().items()) or "none"
    typer.echo(f"kept {len(report.kept)} of {len(report.worlds)} worlds; rejected by reason: {reasons}"
               f"{skipped_note(report)}")
    typer.echo(f"report: {config.out / 'report.json'} and {config.out / 'report.html'}")


def skipped_note(report: CheckReport) -> str:
    """`` (not run without --model: ...)`` when the simulator checks were skipped, else empty."""
    return f" (not run without --model: {', '.join(report.skipped)})" if report.skipped else ""


def check_worlds(config: SynthCheckConfig, folders: list[Path]) -> CheckReport:
    """Run the checks over world folders and write the report (``synth check``, and ``synth envs`` after
    generating); returns it."""
    import asyncio

    from agentworld.synth.checks import arun_checks
    from agentworld.synth.report import write_report

    limits = CheckThresholds.model_validate({k: getattr(config, k) for k in CheckThresholds.model_fields})
    backend: Any = None
    if config.model is not None:
        backend = config.model_endpoint().backend()

    async def run() -> Any:
        from agentworld.models.cache import ResponseCache

        cache = ResponseCache(config.cache) if config.cache is not None and backend is not None else None
        try:
            return await arun_checks(folders, model=backend, thresholds=limits, cache=cache,
                                     concurrency=config.concurrency)
        finally:
            if cache is not None:
                cache.close()
            close = getattr(backend, "aclose", None)
            if close is not None:
                await close()

    report: CheckReport = asyncio.run(run())
    write_report(report, config.out)
    return report


def register(app: typer.Typer) -> None:
    """Add ``check`` to the ``agentworld synth`` group."""
    config_command(app, SynthCheckConfig, _check, name="check", extra={"worlds": (list[Path], WORLDS)},
                   help="Check world folders (tool schemas, task references, goals not already met, "
                        "reference plans in the simulator, a ledger contradiction budget, near-duplicates) "
                        "and write report.json and report.html with each rejection's reason.")

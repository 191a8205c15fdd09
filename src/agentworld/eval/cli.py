"""``agentworld eval``: run, infer, judge and score, with options generated from the config classes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from agentworld.cli_support import config_command, new_app
from agentworld.errors import AgentWorldError
from agentworld.eval.config import EvalConfig, InferConfig, JudgeConfig
from agentworld.eval.runner import run_eval, run_judge, score_run
from agentworld.eval.score import ScoreReport, render, score_official_judged

app = new_app("Evaluate world models on AgentWorldBench-format data.")


@contextmanager
def _errors() -> Iterator[None]:
    """agentworld's own errors become one red line and exit code 2 (no traceback)."""
    try:
        yield
    except AgentWorldError as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from None


def _show(report: ScoreReport, as_json: bool = False) -> None:
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        render(report, Console())


def _run(config: EvalConfig) -> None:
    with _errors():
        _show(run_eval(config))
        typer.echo(f"wrote {config.out / 'scores.json'}")


def _infer(config: InferConfig) -> None:
    with _errors():
        _show(run_eval(EvalConfig(**dict(config), no_judge=True)))


def _judge(config: JudgeConfig) -> None:
    with _errors():
        _show(run_judge(config))


config_command(app, EvalConfig, _run, name="run",
               help="Infer, judge, rule tier and score in one resumable run (an existing --out resumes).")
config_command(app, InferConfig, _infer, name="infer",
               help="World-model predictions only (resumable); judge later with 'eval judge --run'.")
config_command(app, JudgeConfig, _judge, name="judge",
               help="(Re-)judge the predictions of a run; the world model is never called again.")


@app.command()
def score(
    run: Path | None = typer.Option(None, "--run", help="Run folder to score (writes its scores.json)."),
    judged: Path | None = typer.Option(None, "--judged", help="judged.jsonl written by the official "
                                       "eval.py: reproduce its numbers."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Aggregate scores: per-domain table, both Overall figures, failures, tokens."""
    with _errors():
        if (run is None) == (judged is None):
            raise AgentWorldError("give exactly one of --run DIR or --judged FILE")
        if judged is not None:
            if not judged.is_file():
                raise AgentWorldError(f"{judged}: no such file")
            lines = judged.read_text("utf-8").splitlines()
            rows: list[dict[str, Any]] = [json.loads(line) for line in lines if line.strip()]
            report = score_official_judged(rows)
        else:
            assert run is not None
            report = score_run(run)
        _show(report, as_json)


@app.command()
def report(
    run: Path = typer.Option(..., "--run", help="Run folder written by 'eval run' or 'eval infer'."),
    out: Path | None = typer.Option(None, "--out", help="HTML file to write (default RUN/report.html)."),
) -> None:
    """Write a self-contained HTML report: charts, rule-tier table, per-sample diffs."""
    from agentworld.eval.report import write_report

    with _errors():
        if not (run / "predictions.jsonl").exists():
            raise AgentWorldError(f"{run}: not a run folder (no predictions.jsonl)")
        typer.echo(f"wrote {write_report(run, out)}")


if __name__ == "__main__":
    app()

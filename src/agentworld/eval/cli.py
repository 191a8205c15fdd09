"""``agentworld eval``: run, infer, judge, score and report, with options generated from the config classes.

Only the configs are imported here; the runner, the backends (the ``openai`` SDK) and rich are
imported inside the command that needs them, so ``--help`` and the start of a run stay fast.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from pydantic import BaseModel, ConfigDict, Field

from agentworld.cli_support import config_command, new_app
from agentworld.errors import AgentWorldError
from agentworld.eval.config import EvalConfig, InferConfig, JudgeConfig
from agentworld.redact import redact_text

if TYPE_CHECKING:
    from agentworld.eval.score import ScoreReport

app = new_app("Evaluate world models on AgentWorldBench-format data.")


class ScoreConfig(BaseModel):
    """``agentworld eval score``: aggregate the scores of a run, or of the official script's output."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run: Path | None = Field(None, description="Run folder to score (rewrites its scores.json).")
    judged: Path | None = Field(None, description="judged.jsonl written by the official eval.py: reproduce "
                                "its numbers (and show the failures it drops).")


class ReportConfig(BaseModel):
    """``agentworld eval report``: one self-contained HTML file for a run folder."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run: Path = Field(description="Run folder written by 'eval run' or 'eval infer'.")
    out: Path | None = Field(None, description="HTML file to write (default: RUN/report.html).",
                             json_schema_extra={"output": "file"})


@contextmanager
def _errors() -> Iterator[None]:
    """agentworld's own errors become one red line and exit code 2 (no traceback), without credentials.

    The root command does the same; this also covers ``python -m agentworld.eval.cli``.
    """
    try:
        yield
    except AgentWorldError as exc:
        typer.secho(f"error: {redact_text(str(exc))}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from None


def _show(report: ScoreReport, as_json: bool = False) -> None:
    """The report on stdout: JSON, rich tables on a terminal, or full-width plain text in a pipe."""
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    elif sys.stdout.isatty():
        from rich.console import Console

        from agentworld.eval.score import render

        render(report, Console())
    else:
        from agentworld.eval.score import render_text

        typer.echo(render_text(report))


def _run(config: EvalConfig) -> None:
    from agentworld.eval.runner import run_eval

    with _errors():
        _show(run_eval(config))
        typer.echo(f"wrote {config.out / 'scores.json'}")


def _infer(config: InferConfig) -> None:
    from agentworld.eval.runner import run_eval

    with _errors():
        _show(run_eval(EvalConfig(**dict(config), no_judge=True)))


def _judge(config: JudgeConfig) -> None:
    from agentworld.eval.runner import run_judge

    with _errors():
        _show(run_judge(config))


def _score(config: ScoreConfig, as_json: bool = False) -> None:
    from agentworld.eval.runner import score_run
    from agentworld.eval.score import read_official_judged, score_official_judged

    with _errors():
        if (config.run is None) == (config.judged is None):
            raise AgentWorldError("give exactly one of --run DIR or --judged FILE")
        if config.judged is not None:
            report = score_official_judged(read_official_judged(config.judged))
        else:
            assert config.run is not None
            report = score_run(config.run)
        _show(report, as_json)


def _report(config: ReportConfig) -> None:
    from agentworld.eval.report import write_report
    from agentworld.eval.runfolder import require_run

    with _errors():
        require_run(config.run)
        typer.echo(f"wrote {write_report(config.run, config.out)}")


config_command(app, EvalConfig, _run, name="run",
               help="Infer, judge, rule tier and score in one resumable run (a run folder as --out resumes).")
config_command(app, InferConfig, _infer, name="infer",
               help="World-model predictions only (resumable); judge later with 'eval judge --run'.")
config_command(app, JudgeConfig, _judge, name="judge",
               help="(Re-)judge the predictions of a run; the world model is never called again.")
config_command(app, ScoreConfig, _score, name="score",
               extra={"as_json": (bool, typer.Option(False, "--json", help="Print the report as JSON."))},
               help="Aggregate scores: per-domain table, both Overall figures, failures, tokens.")
config_command(app, ReportConfig, _report, name="report",
               help="Write a self-contained HTML report: charts, rule-tier table, per-sample diffs.")


# -- eval probes ---------------------------------------------------------------------------------------

from agentworld.eval.probes.config import ProbesConfig  # noqa: E402


def _probes(config: ProbesConfig) -> None:
    from agentworld.eval.probes.command import probes_command

    with _errors():
        probes_command(config)


config_command(app, ProbesConfig, _probes, name="probes",
               help="Verify a world model by rules: generated probes of controllability, error handling "
                    "and long-context consistency per domain (resumable); --data-out exports them for "
                    "the mock server.")


# -- eval compare --------------------------------------------------------------------------------------
from agentworld.eval.compare.config import CompareConfig  # noqa: E402


def _compare(config: CompareConfig) -> None:
    from agentworld.eval.compare.command import run_compare

    with _errors():
        run_compare(config)


config_command(app, CompareConfig, _compare, name="compare",
               help="Compare run folders over the same samples: paired differences per domain and metric "
                    "with bootstrap intervals; a table, --json or an HTML page (--out).")


# --- eval agent-predictions (issue 12, point 2): the agent's own prediction accuracy -------------------
from agentworld.eval.agentpred.config import AgentPredConfig  # noqa: E402


def _agent_predictions(config: AgentPredConfig, as_json: bool = False) -> None:
    from agentworld.eval.agentpred.command import run_agent_predictions
    from agentworld.eval.agentpred.summary import render_text

    with _errors():
        summary = run_agent_predictions(config)
        typer.echo(json.dumps(summary.model_dump(mode="json"), indent=2) if as_json else render_text(summary))
        typer.echo(f"wrote {config.out / 'summary.json'}", err=as_json)


config_command(app, AgentPredConfig, _agent_predictions, name="agent-predictions",
               extra={"as_json": (bool, typer.Option(False, "--json", help="Print the summary as JSON."))},
               help="The agent predicts each action's observation, the action runs for real, the rule tier "
                    "scores the prediction (beside empty and repeat-previous baselines); resumable.")


# --- eval closed-loop (issue 13, point 5): the same agent in the real environment and the simulator ----
from agentworld.eval.closedloop.config import ClosedLoopConfig  # noqa: E402


def _closed_loop(config: ClosedLoopConfig, as_json: bool = False) -> None:
    from agentworld.eval.closedloop.command import run_closed_loop
    from agentworld.eval.closedloop.score import render_text

    with _errors():
        report = run_closed_loop(config)
        summary = report["summary"]
        typer.echo(json.dumps(summary, indent=2) if as_json else render_text(summary))
        typer.echo(f"wrote {config.out / 'report.json'} and {config.out / 'report.html'}", err=as_json)


config_command(app, ClosedLoopConfig, _closed_loop, name="closed-loop",
               extra={"as_json": (bool, typer.Option(False, "--json", help="Print the summary as JSON."))},
               help="Run each task with the same agent in the real environment and in the simulator (with "
                    "and without ledger and router): per-step fidelity, first divergence, outcome agreement; "
                    "resumable.")


# --- eval closed-loop-truth: the mock server's ground truth for a closed-loop task file -------------------
from agentworld.eval.closedloop.config import TruthConfig  # noqa: E402


def _truth(config: TruthConfig) -> None:
    from agentworld.eval.closedloop.truth import write_truth

    with _errors():
        typer.echo(f"wrote {write_truth(config)} rows to {config.out}")


config_command(app, TruthConfig, _truth, name="closed-loop-truth")


if __name__ == "__main__":
    app()

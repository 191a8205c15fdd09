"""The offline demo: record real terminal sessions, simulate them, score them, write the report.

Runs on a fresh machine with no network and no key. The world model is the retrieval baseline
built from the shipped corpus *without* the demo scenarios (so it predicts sessions it has never
seen); the score is the judge-free rule tier. With ``model_base_url`` the demo uses that world
model instead, and with a judge it adds the rubric scores.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field

from agentworld.endpoints import JudgeEndpoint, ModelEndpoint

if TYPE_CHECKING:
    from rich.console import Console

DEMO_SCENARIOS: tuple[str, ...] = (
    "files-heredoc",
    "pipes-chains",
    "python-script",
    "python-traceback",
    "git-init-commit",
    "nav-cd-subdirs",
    "interactive-sleep-interrupt",
)
"""Built-in scenarios the demo records fresh; the retrieval index is built without them."""


class DemoConfig(ModelEndpoint, JudgeEndpoint):
    """Offline demo: record real terminal sessions in the sandbox, simulate them, score them, write the
    report (one run folder per world model)."""

    out: Path = Field(Path("agentworld-demo"), description="Folder for the recordings, the runs and the "
                      "report (resumed when it exists).")
    model: str = Field("retrieval", description="World model: the served model name with --model-base-url; "
                       "without it a backend name (default: the offline retrieval baseline, built from the "
                       "shipped corpus without the demo scenarios).")
    seed: int = Field(0, description="Seed of the sandbox hostnames and any sampling.")
    scenarios: tuple[str, ...] = Field(DEMO_SCENARIOS, description="Built-in scenarios to record and "
                                       "simulate.")


def record_demo_data(config: DemoConfig, data_file: Path, console: Console) -> None:
    """Record the demo scenarios into ``data_file`` (resumes: finished scenarios are kept)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from agentworld.domains.terminal.record import builtin_scenarios_dir, load_scenarios, record_to_jsonl
    from agentworld.envs.sandbox import missing_tools

    missing = missing_tools() + ([] if shutil.which("tmux") else ["tmux"])
    if missing:
        from agentworld.errors import AgentWorldError

        raise AgentWorldError(f"the terminal sandbox needs {', '.join(missing)}; run ./install.sh "
                              "or install them with your package manager")
    wanted = set(config.scenarios)
    scenarios = [s for s in load_scenarios(builtin_scenarios_dir()) if s.name in wanted]
    with Progress(TextColumn("recording {task.description}"), BarColumn(), TextColumn("{task.completed}/"
                  "{task.total}"), TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task("real terminal sessions", total=len(scenarios))
        summary = record_to_jsonl(
            scenarios, data_file, seed=config.seed, resume=True,
            on_start=lambda s: bar.update(task, description=s.name),
            on_done=lambda s, t, err: bar.advance(task))
    if summary.failed:
        console.print(f"[yellow]scenarios that failed to record: {', '.join(summary.failed)}[/]")
    console.print(f"recorded {summary.recorded} scenario(s) ({summary.skipped} already there) "
                  f"into {data_file}")


def run_demo(config: DemoConfig, console: Console | None = None) -> Path:
    """Run the whole demo; returns the path of the HTML report."""
    from rich.console import Console

    from agentworld.endpoints import build_backend
    from agentworld.eval.config import EvalConfig
    from agentworld.eval.report import write_report
    from agentworld.eval.runner import run_eval
    from agentworld.eval.score import render
    from agentworld.models.base import ChatBackend
    from agentworld.models.retrieval import RetrievalBackend, RetrievalIndex, default_corpus

    console = console or Console()
    out = Path(config.out)
    data_file = out / "data" / "terminal_test.jsonl"
    console.rule("1. record real terminal sessions in the sandbox")
    record_demo_data(config, data_file, console)

    model: ChatBackend | None = None
    if config.model_base_url is None and config.model == "retrieval":
        held_out = set(config.scenarios)
        index = RetrievalIndex(config.model_corpus or default_corpus(),
                               exclude=lambda row: row.id.rpartition("-t")[0] in held_out)
        model = RetrievalBackend(index)
        console.print(f"world model: retrieval baseline over {len(index)} recorded transitions "
                      f"(demo scenarios held out)")
    elif config.model_base_url is None:
        model = build_backend(config.model, corpus=config.model_corpus)
    console.rule("2. simulate them with the world model, 3. score")
    judge_tag = f"+{config.judge_model}" if config.judge_base_url else ""
    run_dir = out / "runs" / re.sub(r"[^A-Za-z0-9._-]+", "_", f"{config.model}{judge_tag}")
    run_config = EvalConfig(
        data=[data_file], out=run_dir, model=config.model, model_base_url=config.model_base_url,
        model_api_key=config.model_api_key, judge_base_url=config.judge_base_url,
        judge_model=config.judge_model, judge_api_key=config.judge_api_key,
        no_judge=config.judge_base_url is None, temperature=0.0 if model is not None else 0.6,
        seed=config.seed)
    report = run_eval(run_config, model=model)
    render(report, console)
    path = write_report(run_dir)
    console.rule("done")
    console.print(f"report: {path.resolve()}")
    return path

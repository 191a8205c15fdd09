"""The single ``agentworld`` command; each subcommand delegates to the module that owns it."""

from __future__ import annotations

import typer

from agentworld import __version__
from agentworld.data.cli import app as data_app
from agentworld.envs.cli import app as record_app
from agentworld.eval.cli import app as eval_app
from agentworld.serve.cli import app as mock_app
from agentworld.serve.serve_cli import app as serve_app
from agentworld.serve.shell import app as shell_app
from agentworld.train.cli import app as train_app
from agentworld.train.rollout_cli import app as rollout_app

app = typer.Typer(
    name="agentworld",
    help="Language world models for agents: record real environments, simulate them, evaluate world models.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
app.add_typer(record_app, name="record", help="Record real environments into AgentWorldBench rows.")
app.add_typer(eval_app, name="eval", help="Evaluate world models on AgentWorldBench-format data.")
app.add_typer(data_app, name="data", help="Turn real trajectories into training data: convert, process, "
              "export, stats.")
app.add_typer(serve_app, name="serve",
              help="Serve the simulator: MCP server (stdio/HTTP) or HTTP session API.")
app.add_typer(train_app, name="train", help="Train world models: CPT, SFT (and RL) from a config file.")
for command in [*mock_app.registered_commands, *shell_app.registered_commands,
                *rollout_app.registered_commands]:
    app.registered_commands.append(command)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"agentworld {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Show the version."),
) -> None:
    """agentworld — language world models for agents."""


demo_app = typer.Typer(help="Offline demos: the evaluation demo (no subcommand) and 'demo train'.")
app.add_typer(demo_app, name="demo")


@demo_app.callback(invoke_without_command=True)
def demo(
    ctx: typer.Context,
    out: str = typer.Option("agentworld-demo", help="Folder for the recordings, the run and the report."),
    model_base_url: str | None = typer.Option(None, help="Use this OpenAI-compatible world model instead "
                                              "of the offline retrieval baseline."),
    model: str = typer.Option("retrieval", help="World-model name (served model, or a backend name)."),
    judge_base_url: str | None = typer.Option(None, help="Add the rubric judge at this endpoint."),
    judge_model: str | None = typer.Option(None, help="Judge model name."),
    seed: int = typer.Option(0, help="Seed for the sandbox hostnames and any sampling."),
) -> None:
    """Offline demo: record real terminal scenarios, simulate them, score them, write the report."""
    if ctx.invoked_subcommand is not None:
        return
    from agentworld.demo import DemoConfig, run_demo

    run_demo(DemoConfig(out=out, model_base_url=model_base_url, model=model,
                        judge_base_url=judge_base_url, judge_model=judge_model, seed=seed))


@demo_app.command("train")
def demo_train(
    out: str = typer.Option("agentworld-demo-train",
                            help="Folder for the tiny model, the run and the report."),
    steps: int = typer.Option(150, help="SFT steps (about a second each on a laptop CPU)."),
    seed: int = typer.Option(0, help="Seed of the model, the split and the sampling."),
) -> None:
    """Train a tiny world model on the bundled real terminal recordings (CPU, no download)."""
    from agentworld.train.demo import TrainDemoConfig, run_train_demo

    run_train_demo(TrainDemoConfig(out=out, steps=steps, seed=seed))


MULTI_VALUE_OPTIONS = frozenset({"--data"})
"""Options that take several values after one flag (``--data a.jsonl b.jsonl``, shell globs)."""


def expand_multi_value(argv: list[str]) -> list[str]:
    """Rewrite ``--data a b`` as ``--data a --data b`` (click options take one value per flag).

    >>> expand_multi_value(["eval", "run", "--data", "a", "b", "--out", "r"])
    ['eval', 'run', '--data', 'a', '--data', 'b', '--out', 'r']
    """
    out: list[str] = []
    current: str | None = None
    for arg in argv:
        if arg.startswith("-"):
            current = arg if arg in MULTI_VALUE_OPTIONS else None
            out.append(arg)
        elif current is not None and out[-1] != current:
            out.extend([current, arg])
        else:
            out.append(arg)
    return out


def main() -> None:
    """Console-script entry point; turns agentworld's own errors into one clear line and exit code 2."""
    import sys

    from agentworld.errors import AgentWorldError

    try:
        app(args=expand_multi_value(sys.argv[1:]), prog_name="agentworld")
    except AgentWorldError as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        raise SystemExit(2) from None

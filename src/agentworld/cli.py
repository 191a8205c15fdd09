"""The single ``agentworld`` command; each sub-command group is imported only when it is used.

Why lazy: the groups pull in the ``openai`` SDK, FastAPI, the data pipeline and torch; importing
them all made ``agentworld --help`` take 2.6 s. The root lists the groups from :data:`COMMANDS`
(name, module, one-line help) and imports a group's module when it is invoked. Errors are
handled here once for every command: agentworld's own errors and usage errors print one red line
on stderr and exit with code 2, never a traceback.
"""

from __future__ import annotations

import errno
import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import typer

from agentworld import __version__
from agentworld.cli_click import (
    Abort,
    ClickException,
    Command,
    Context,
    HelpFormatter,
    NoArgsIsHelpError,
    TyperGroup,
    UsageError,
    secho,
)
from agentworld.errors import AgentWorldError


@dataclass(frozen=True)
class LazyCommand:
    """A sub-command: ``target`` is ``module:attribute`` of its typer app; ``sub`` picks one of its
    commands (for aliases such as ``mock-server`` → ``serve mock``)."""

    target: str
    help: str
    sub: str | None = None
    hidden: bool = False


COMMANDS: dict[str, LazyCommand] = {
    "demo": LazyCommand("agentworld.demo_cli:app", "Offline demos: record, simulate and score real terminal "
                        "sessions; 'demo train' fine-tunes SmolLM2-135M into a world model."),
    "record": LazyCommand("agentworld.record_cli:app", "Record real environments into AgentWorldBench rows "
                          "(one sub-command per domain with a recorder)."),
    "eval": LazyCommand("agentworld.eval.cli:app", "Evaluate world models on AgentWorldBench-format data."),
    "data": LazyCommand("agentworld.data.cli:app", "Turn real trajectories into training data: convert, "
                        "process, export, stats."),
    "serve": LazyCommand("agentworld.serve.serve_cli:app", "Serve simulated environments (MCP, HTTP session "
                         "API) and the mock OpenAI-compatible server."),
    "train": LazyCommand("agentworld.train.cli:app", "Train world models (CPT, SFT, RL) and run Sim RL "
                         "rollouts."),
    "synth": LazyCommand("agentworld.synth.cli:app", "Synthesize environments (world folders) from seeds "
                         "with a generator model."),
    "shell": LazyCommand("agentworld.serve.shell_cli:app", "Type into a simulated terminal or MCP server and "
                         "see what it answers."),
    "plan": LazyCommand("agentworld.plan.cli:app", "Predict before acting: imagine candidate actions with a "
                        "world model and rank them."),
    "optimize": LazyCommand("agentworld.optimize.cli:app", "Optimise the world model's system prompts "
                            "(propose, evaluate, refine; a validation split decides)."),
    "mock-server": LazyCommand("agentworld.serve.serve_cli:app", "Old name of 'serve mock'.", sub="mock",
                               hidden=True),
    "rollout": LazyCommand("agentworld.train.cli:app", "Old name of 'train rollout'.", sub="rollout",
                           hidden=True),
    "doctor": LazyCommand("agentworld.doctor.cli:app", "Check a world-model endpoint (and a judge) before a "
                          "run: reasoning field, context length, a prediction per domain, the flags to use."),
}
"""Every sub-command of ``agentworld``; hidden ones are old names kept working."""


def load_command(name: str) -> Command:
    """Import and build the click command registered as ``name`` in :data:`COMMANDS`."""
    entry = COMMANDS[name]
    module, _, attribute = entry.target.partition(":")
    command = typer.main.get_command(getattr(importlib.import_module(module), attribute))
    if entry.sub is not None:
        command = command.commands[entry.sub]  # type: ignore[attr-defined]
    return command


class UserError(ClickException):
    """A mistake the user can fix: shown as one red line, exit code 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        secho(f"error: {self.format_message()}", fg="red", err=True)


class RootGroup(TyperGroup):
    """The root command: lazy sub-commands and one way of reporting user errors."""

    def list_commands(self, ctx: Context) -> list[str]:
        return [*super().list_commands(ctx), *COMMANDS]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        found = super().get_command(ctx, cmd_name)
        if found is None and cmd_name in COMMANDS:
            found = load_command(cmd_name)
        return found

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        rows = [(name, entry.help) for name, entry in COMMANDS.items() if not entry.hidden]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: Context) -> Any:
        from agentworld.outputs import release_all

        try:
            return super().invoke(ctx)
        except AgentWorldError as exc:
            raise UserError(str(exc)) from None
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as exc:
            raise UserError(str(exc)) from None
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            from agentworld.errors import DiskFullError

            raise UserError(str(DiskFullError(exc.filename or "an output"))) from None
        finally:
            release_all()

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, windows_expand_args: bool = True,
             **extra: Any) -> Any:
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False,
                                  windows_expand_args=windows_expand_args, **extra)
        except NoArgsIsHelpError as exc:
            code = _fail(exc, standalone_mode)
        except UsageError as exc:
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            code = _fail(UserError(exc.format_message() + hint), standalone_mode)
        except ClickException as exc:
            code = _fail(exc, standalone_mode)
        except Abort:
            secho("interrupted", fg="red", err=True)
            code = 130
        else:
            code = result if isinstance(result, int) else 0
            if not standalone_mode:
                return result
        if standalone_mode:
            sys.exit(code)
        return code


def _fail(exc: ClickException, standalone_mode: bool) -> int:
    if not standalone_mode:
        raise exc
    exc.show()
    return exc.exit_code


app = typer.Typer(
    name="agentworld", cls=RootGroup, no_args_is_help=True, rich_markup_mode=None, add_completion=False,
    pretty_exceptions_enable=False,
    help="Language world models for agents: record real environments, simulate them, evaluate and train "
         "world models.")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"agentworld {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Show the version and exit."),
) -> None:
    """agentworld — language world models for agents."""


MULTI_VALUE_OPTIONS = frozenset({"--data", "--model-corpus", "--seed-files"})
"""Options that take several values after one flag (``--data a.jsonl b.jsonl``, shell globs)."""


def expand_multi_value(argv: list[str]) -> list[str]:
    """Rewrite ``--data a b`` as ``--data a --data b`` (click options take one value per flag).

    >>> expand_multi_value(["eval", "run", "--data", "a", "b", "--out", "r"])
    ['eval', 'run', '--data', 'a', '--data', 'b', '--out', 'r']
    """
    out: list[str] = []
    current: str | None = None
    for i, arg in enumerate(argv):
        if arg == "--":
            return [*out, *argv[i:]]
        if arg.startswith("-"):
            current = arg if arg in MULTI_VALUE_OPTIONS else None
            out.append(arg)
        elif current is not None and out[-1] != current:
            out.extend([current, arg])
        else:
            out.append(arg)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``argv`` defaults to the process arguments); exits the process."""
    args = expand_multi_value(list(sys.argv[1:] if argv is None else argv))
    typer.main.get_command(app).main(args=args, prog_name="agentworld")

"""``agentworld record <domain>``: one sub-command per domain whose plugin names a recorder.

Generated from the registry: a plugin's ``recorder`` references a
:class:`~agentworld.domains.base.RecorderCommand` (options config, run, help), and its options are
generated from that config (:func:`agentworld.cli_support.config_command`). A domain's recorder module
is imported only when its command (or ``agentworld record --help``) needs it. Example::

    agentworld record terminal --scenarios my_scenarios.json --out terminal_test.jsonl
"""

from __future__ import annotations

import typer

from agentworld.cli_click import Command, Context, TyperGroup
from agentworld.cli_support import config_command, new_app
from agentworld.domains.base import RecorderCommand, plugin_of, resolve
from agentworld.domains.registry import domain_names
from agentworld.errors import AgentWorldError


def recorders() -> list[str]:
    """Names of the domains with a recorder, in the registry's order."""
    return [name for name in domain_names() if plugin_of(name).recorder]


def recorder_command(name: str) -> Command | None:
    """The click command of ``agentworld record <name>`` (None when the domain has no recorder)."""
    found = plugin_of(name)
    if not found.recorder:
        return None
    recorder = resolve(found.recorder)
    if not isinstance(recorder, RecorderCommand):
        raise AgentWorldError(f"domain {name!r}: its plugin's recorder {found.recorder} is not a "
                              "RecorderCommand")
    sub = new_app(recorder.help)
    config_command(sub, recorder.options, recorder.run, name=name, extra=recorder.arguments,
                   help=recorder.help or None)
    return typer.main.get_command(sub)


class RecordGroup(TyperGroup):
    """The ``record`` group: its sub-commands come from the domain plugins, each built when asked for."""

    def list_commands(self, ctx: Context) -> list[str]:
        return recorders()

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        return recorder_command(cmd_name)


app = new_app("Record real environments into AgentWorldBench rows: one sub-command per domain with a "
              "recorder.", cls=RecordGroup)


@app.callback()
def _record() -> None:
    """Record real environments into AgentWorldBench rows: one sub-command per domain with a recorder."""

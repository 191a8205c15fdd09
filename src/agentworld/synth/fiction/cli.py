"""``agentworld synth world``: a fictional world (bible, simulator inputs, tasks) into a folder.

The ``synth`` group (:mod:`agentworld.synth.cli`) registers :func:`run` as ``world``; this module's
:data:`app` serves the same command on its own.
"""

from __future__ import annotations

from agentworld.cli_support import config_command, new_app
from agentworld.synth.fiction.config import FictionConfig

app = new_app("Fictional worlds: a checked world bible and a search or MCP world that answers from it.")


@app.callback()
def _group() -> None:
    """Keeps ``world`` a sub-command while it is this app's only one."""


def run(config: FictionConfig) -> None:
    """Build the world and print one summary line."""
    from agentworld.synth.fiction.build import build_world

    report = build_world(config)
    left = f", {len(report['left_out'])} profiles left out" if report["left_out"] else ""
    print(f"{config.out}: {report['domain']} world of {report['entities']} entities, {report['documents']} "
          f"documents, {report['tasks']} tasks ({report['table_tasks']} tables){left}")


config_command(app, FictionConfig, run, name="world")

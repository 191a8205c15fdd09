"""``agentworld optimize``: optimise the world model's system prompts (``optimize prompts``).

Only the config is imported here; the loop, the backends and the eval machinery are imported when
the command runs, so ``--help`` stays fast.
"""

from __future__ import annotations

import typer

from agentworld.cli_support import config_command, new_app
from agentworld.optimize.config import CLI_EXCLUDED, PromptOptConfig

app = new_app("Optimise the world model's prompts: an optimizer model proposes revisions, a validation split "
              "decides.")


@app.callback()
def _group() -> None:
    """Optimise the world model's prompts (a group, so that more optimisers can join 'prompts')."""


def _prompts(config: PromptOptConfig) -> None:
    from agentworld.optimize.prompts import run_optimize
    from agentworld.optimize.store import render_table

    summaries = run_optimize(config)
    typer.echo(render_table(summaries))
    for s in summaries:
        line = s.line(s.winner)
        typer.echo(f"{s.domain}: winner v{s.winner} (validation {line.val:.2f}; v0 {s.line(0).val:.2f}) -> "
                   f"{config.out / 'variants' / s.domain / f'v{s.winner}.txt'}")
    typer.echo(f"wrote {config.out / 'summary.json'}")


config_command(app, PromptOptConfig, _prompts, name="prompts", exclude=CLI_EXCLUDED,
               help="Propose-evaluate-refine a domain's world-model system prompt on a training split; the "
                    "validation split picks the winner. Every variant is kept in OUT/variants/<domain>/; "
                    "the same command on OUT resumes.")

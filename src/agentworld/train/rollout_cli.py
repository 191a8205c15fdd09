"""``agentworld rollout``: run Sim RL rollouts of an agent endpoint against a world-model endpoint.

Why a separate app: the lead mounts it under the main CLI; the logic lives in
:mod:`agentworld.train.rollout` so it is usable (and tested) without a command line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, cast

import typer

from agentworld.cli_support import new_app
from agentworld.io import atomic_write_jsonl
from agentworld.models.base import create_backend
from agentworld.sim.types import FAULT_KINDS, FaultKind, WorldSpec
from agentworld.train.rollout import (
    Curriculum,
    episode_rl_rows,
    run_rollouts,
    trajectory_rows,
    write_episodes,
)

app = new_app("Sim RL rollouts under a fault curriculum.", no_args_is_help=False)


def _tools(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text("utf-8"))
    tools = data.get("tools", data) if isinstance(data, dict) else data
    if not isinstance(tools, list):
        raise typer.BadParameter('expected a JSON list of MCP tools or {"tools": [...]}',
                                 param_hint="--tools")
    return tools


@app.command()
def rollout(
    tools: Annotated[Path, typer.Option(help="MCP tools/list JSON (a list, or {\"tools\": [...]}).")],
    agent_base_url: Annotated[str, typer.Option(help="Agent's OpenAI-compatible base URL.")],
    agent_model: Annotated[str, typer.Option(help="Agent model name.")],
    model_base_url: Annotated[str, typer.Option(help="World model's OpenAI-compatible base URL.")],
    model: Annotated[str, typer.Option(help="World model name.")],
    out: Annotated[Path, typer.Option(help="Episodes (unified-schema trajectories) JSONL.")],
    episodes: Annotated[int, typer.Option(min=1)] = 8,
    max_turns: Annotated[int, typer.Option(min=1)] = 10,
    fault_kinds: Annotated[str, typer.Option(help="Comma-separated fault kinds.")] = "",
    rate_start: Annotated[float, typer.Option(min=0, max=1)] = 0.0,
    rate_end: Annotated[float, typer.Option(min=0, max=1)] = 0.5,
    task: Annotated[str, typer.Option(help="The agent's task.")] = "",
    seed: int = 0,
    api_key: Annotated[str | None, typer.Option(envvar="OPENAI_API_KEY")] = None,
) -> None:
    """Run episodes; write trajectories to OUT plus ``.steps.jsonl`` and ``.rl.jsonl`` RL exports."""
    kinds = [k.strip() for k in fault_kinds.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in FAULT_KINDS]
    if unknown:
        raise typer.BadParameter(f"unknown fault kinds {unknown}; known: {', '.join(FAULT_KINDS)}",
                                 param_hint="--fault-kinds")
    curriculum = Curriculum(fault_kinds=[cast(FaultKind, k) for k in kinds], rate_start=rate_start,
                            rate_end=rate_end)
    spec = WorldSpec(domain="mcp", tools=_tools(tools))
    agent = create_backend("openai", base_url=agent_base_url, model=agent_model, api_key=api_key)
    world = create_backend("openai", base_url=model_base_url, model=model, api_key=api_key)
    done = list(run_rollouts(agent, world, spec, curriculum, episodes, max_turns, task=task, seed=seed,
                             agent_model=agent_model))
    write_episodes(out, done)
    atomic_write_jsonl(out.with_suffix(".steps.jsonl"), episode_rl_rows(done))
    atomic_write_jsonl(out.with_suffix(".rl.jsonl"), trajectory_rows(done))
    mean = sum(e.reward for e in done) / len(done)
    faults = sum(t.meta.get("fault") is not None for e in done for t in e.trajectory.turns)
    typer.echo(json.dumps({"episodes": len(done), "mean_reward": mean, "faults": faults, "out": str(out)}))

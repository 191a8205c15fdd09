"""The body of ``agentworld train rollout``: Sim RL rollouts of an agent endpoint against a world model.

The options are :class:`agentworld.train.cli.RolloutOptions`; the logic lives in
:mod:`agentworld.train.rollout` so it is usable (and tested) without a command line. The agent and
the world model are separate endpoints with separate keys (``--agent-api-key``,
``--model-api-key``): a key meant for one is never sent to the other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

from agentworld.domains import TOOLS_DOMAIN
from agentworld.endpoints import build_backend
from agentworld.errors import DataError
from agentworld.io import atomic_write_jsonl, atomic_write_text
from agentworld.models.base import ChatBackend
from agentworld.sim.types import FaultKind, WorldSpec
from agentworld.train.rollout import (
    Curriculum,
    Episode,
    episode_rl_rows,
    run_rollouts,
    trajectory_rows,
    write_episodes,
)

if TYPE_CHECKING:
    from agentworld.train.cli import RolloutOptions


def run_rollout_command(options: RolloutOptions) -> None:
    """Run the episodes; write trajectories to ``out`` plus ``.steps.jsonl`` and ``.rl.jsonl`` RL exports."""
    from agentworld.serve.mcp_server import load_tools

    curriculum = Curriculum(fault_kinds=[cast(FaultKind, k) for k in options.fault_kinds],
                            rate_start=options.rate_start, rate_end=options.rate_end)
    agent = build_backend(options.agent_model, options.agent_base_url, options.agent_api_key)
    world = build_backend(options.model, options.model_base_url, options.model_api_key,
                          corpus=options.model_corpus)
    if options.world is not None:
        _run_world(options, agent, world)
    else:
        assert options.tools is not None
        spec = WorldSpec(domain=TOOLS_DOMAIN, tools=load_tools(options.tools))
        done = list(run_rollouts(agent, world, spec, curriculum, options.episodes, options.max_turns,
                                 task=options.task, seed=options.seed, agent_model=options.agent_model))
        _write(options.out, done)
    from agentworld.models.pool import render_stats, write_endpoint_stats

    stats = write_endpoint_stats(world, options.out.with_suffix(".endpoints.json"))
    if stats is not None:  # a pool of world-model endpoints: how each one did
        typer.echo(render_stats(stats), err=True)


def _run_world(options: RolloutOptions, agent: ChatBackend, world: ChatBackend) -> None:
    """Episodes on a world folder's tasks: one row (its own controls), or one per controls/*.yaml spec."""
    from agentworld.train.sweep import SweepTask, load_world_tasks, sweep_controls

    assert options.world is not None
    loaded, spec, tasks = load_world_tasks(options.world)
    if options.task:
        tasks = [SweepTask(id="cli", instruction=options.task)]
    elif not tasks:
        raise DataError("the world has no task to roll out: give --task, or add tasks to tasks.jsonl",
                        path=str(options.world / "tasks.jsonl"))
    controls = sorted(loaded.controls.items()) if options.sweep_controls else []
    rows = sweep_controls(agent, world, spec, controls, tasks, options.episodes, options.max_turns,
                          seed=options.seed, agent_model=options.agent_model)
    done = [episode for _, episodes in rows for episode in episodes]
    _write(options.out, done, quiet=options.sweep_controls)
    if options.sweep_controls:
        summary = [row.model_dump(mode="json") for row, _ in rows]
        atomic_write_text(options.out.with_suffix(".sweep.json"), json.dumps(summary, indent=2) + "\n")
        for row in summary:
            typer.echo(json.dumps(row))


def _write(out: Path, done: list[Episode], *, quiet: bool = False) -> None:
    write_episodes(out, done)
    atomic_write_jsonl(out.with_suffix(".steps.jsonl"), episode_rl_rows(done))
    atomic_write_jsonl(out.with_suffix(".rl.jsonl"), trajectory_rows(done))
    if quiet:
        return
    mean = sum(e.reward for e in done) / len(done)
    faults = sum(t.meta.get("fault") is not None for e in done for t in e.trajectory.turns)
    typer.echo(json.dumps({"episodes": len(done), "mean_reward": mean, "faults": faults, "out": str(out)}))

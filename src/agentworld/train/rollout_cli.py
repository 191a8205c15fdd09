"""The body of ``agentworld train rollout``: Sim RL rollouts of an agent endpoint against a world model.

The options are :class:`agentworld.train.cli.RolloutOptions`; the logic lives in
:mod:`agentworld.train.rollout` so it is usable (and tested) without a command line. The agent and
the world model are separate endpoints with separate keys (``--agent-api-key``,
``--model-api-key``): a key meant for one is never sent to the other.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, cast

import typer

from agentworld.domains import TOOLS_DOMAIN
from agentworld.endpoints import build_backend
from agentworld.io import atomic_write_jsonl
from agentworld.sim.types import FaultKind, WorldSpec
from agentworld.train.rollout import (
    Curriculum,
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
    task = options.task
    if options.world is not None:
        from agentworld.synth.world import load_world

        loaded = load_world(options.world)
        spec = loaded.to_spec()
        task = task or (loaded.tasks[0].instruction if loaded.tasks else "")
    else:
        assert options.tools is not None
        spec = WorldSpec(domain=TOOLS_DOMAIN, tools=load_tools(options.tools))
    agent = build_backend(options.agent_model, options.agent_base_url, options.agent_api_key)
    world = build_backend(options.model, options.model_base_url, options.model_api_key,
                          corpus=options.model_corpus)
    done = list(run_rollouts(agent, world, spec, curriculum, options.episodes, options.max_turns,
                             task=task, seed=options.seed, agent_model=options.agent_model))
    out = options.out
    write_episodes(out, done)
    atomic_write_jsonl(out.with_suffix(".steps.jsonl"), episode_rl_rows(done))
    atomic_write_jsonl(out.with_suffix(".rl.jsonl"), trajectory_rows(done))
    mean = sum(e.reward for e in done) / len(done)
    faults = sum(t.meta.get("fault") is not None for e in done for t in e.trajectory.turns)
    typer.echo(json.dumps({"episodes": len(done), "mean_reward": mean, "faults": faults, "out": str(out)}))

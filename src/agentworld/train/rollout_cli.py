"""The body of ``agentworld train rollout``: Sim RL rollouts of an agent endpoint against a world model.

The options are :class:`agentworld.train.cli.RolloutOptions`; the logic lives in
:mod:`agentworld.train.rollout` so it is usable (and tested) without a command line. The agent and
the world model are separate endpoints with separate keys (``--agent-api-key``,
``--model-api-key``): a key meant for one is never sent to the other. Finished episodes are journaled
(:class:`~agentworld.train.rollout_jobs.RolloutJournal`) so ``--resume`` continues a killed run, and
``--ray`` runs them on Ray actors (:mod:`agentworld.train.rollout_ray`).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

from agentworld.domains import TOOLS_DOMAIN
from agentworld.endpoints import Endpoint
from agentworld.errors import DataError
from agentworld.io import atomic_write_jsonl, atomic_write_text
from agentworld.models.base import ChatBackend
from agentworld.sim.curriculum import Curriculum
from agentworld.sim.types import FaultKind, WorldSpec
from agentworld.train.rollout import Episode, episode_rl_rows, trajectory_rows, write_episodes
from agentworld.train.rollout_jobs import (
    EpisodeJob,
    RolloutJournal,
    curriculum_jobs,
    journal_path,
    run_jobs_local,
)

if TYPE_CHECKING:
    from agentworld.train.cli import RolloutOptions


def run_rollout_command(options: RolloutOptions) -> None:
    """Run the episodes; write trajectories to ``out`` plus ``.steps.jsonl`` and ``.rl.jsonl`` RL exports."""
    from agentworld.sim.toolfile import load_tools

    agent_endpoint, world_endpoint = options.agent_endpoint(), options.model_endpoint()
    agent, world = agent_endpoint.backend(), world_endpoint.backend()
    if options.world is not None:
        _run_world(options, agent, world, agent_endpoint, world_endpoint)
    else:
        assert options.tools is not None
        curriculum = Curriculum(fault_kinds=[cast(FaultKind, k) for k in options.fault_kinds],
                                rate_start=options.rate_start, rate_end=options.rate_end)
        spec = WorldSpec(domain=TOOLS_DOMAIN, tools=load_tools(options.tools))
        jobs = curriculum_jobs(spec, curriculum, options.episodes, options.max_turns, task=options.task,
                               seed=options.seed, agent_model=options.agent_model, world_model=options.model)
        _write(options.out, _run(options, jobs, agent, world, agent_endpoint, world_endpoint))
    from agentworld.models.pool import render_stats, write_endpoint_stats

    stats = write_endpoint_stats(world, options.out.with_suffix(".endpoints.json"))
    if stats is not None:  # a pool of world-model endpoints (in this process): how each one did
        typer.echo(render_stats(stats), err=True)


def _run_world(options: RolloutOptions, agent: ChatBackend, world: ChatBackend, agent_endpoint: Endpoint,
               world_endpoint: Endpoint) -> None:
    """Episodes on a world folder's tasks: one row (its own controls), or one per controls/*.yaml spec."""
    from agentworld.train.sweep import SweepTask, load_world_tasks, summarize, sweep_jobs

    assert options.world is not None
    loaded, spec, tasks = load_world_tasks(options.world)
    if options.task:
        tasks = [SweepTask(id="cli", instruction=options.task)]
    elif not tasks:
        raise DataError("the world has no task to roll out: give --task, or add tasks to tasks.jsonl",
                        path=str(options.world / "tasks.jsonl"))
    controls = sorted(loaded.controls.items()) if options.sweep_controls else []
    rows = sweep_jobs(spec, controls, tasks, options.episodes, options.max_turns, seed=options.seed,
                      agent_model=options.agent_model, world_model=options.model)
    every = [job for _, jobs in rows for job in jobs]
    done = _run(options, every, agent, world, agent_endpoint, world_endpoint)
    _write(options.out, done, quiet=options.sweep_controls)
    if options.sweep_controls:
        summary, start = [], 0
        for name, jobs in rows:
            summary.append(summarize(name, done[start:start + len(jobs)]).model_dump(mode="json"))
            start += len(jobs)
        atomic_write_text(options.out.with_suffix(".sweep.json"), json.dumps(summary, indent=2) + "\n")
        for row in summary:
            typer.echo(json.dumps(row))


def _run(options: RolloutOptions, jobs: list[EpisodeJob], agent: ChatBackend, world: ChatBackend,
         agent_endpoint: Endpoint, world_endpoint: Endpoint) -> list[Episode]:
    """Every job's episode in job order: journaled ones kept (``--resume``), the rest run here or on Ray."""
    journal = RolloutJournal.open(options.out, jobs, resume=options.resume)
    try:
        todo = journal.pending(jobs)
        if options.ray is not None:
            from agentworld.train.rollout_ray import run_jobs_ray

            stream = run_jobs_ray(todo, agent_endpoint, world_endpoint, address=options.ray,
                                  actors=options.ray_actors, sessions_per_actor=options.sessions_per_actor,
                                  on_result=journal.record)
        else:
            stream = run_jobs_local(todo, agent, world, on_result=journal.record)
        for _ in stream:
            pass
        return journal.ordered(jobs)
    finally:
        journal.close()


def _write(out: Path, done: list[Episode], *, quiet: bool = False) -> None:
    """The outputs, each written atomically; then the journal, now redundant, is removed."""
    write_episodes(out, done)
    atomic_write_jsonl(out.with_suffix(".steps.jsonl"), episode_rl_rows(done))
    atomic_write_jsonl(out.with_suffix(".rl.jsonl"), trajectory_rows(done))
    journal_path(out).unlink(missing_ok=True)
    if quiet:
        return
    mean = sum(e.reward for e in done) / len(done)
    faults = sum(t.meta.get("fault") is not None for e in done for t in e.trajectory.turns)
    notes = Counter(note for e in done for note in e.trajectory.meta.get("fault_notes", []))
    noted = {"fault_notes": dict(sorted(notes.items()))} if notes else {}
    typer.echo(json.dumps({"episodes": len(done), "mean_reward": mean, "faults": faults, **noted,
                           "out": str(out)}))

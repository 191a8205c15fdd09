"""Running the tasks of ``eval closed-loop`` concurrently and resumably, and writing the reports.

Each task runs its real episode once (journaled first, so every arm compares against the same one),
then one simulated episode per arm. A (task, arm) whose row is in the journal is skipped; an
unfinished one runs again from its start, the agent's, world model's and judge's answers coming from
the caches. A failing task (an unreachable endpoint, a dying environment) does not stop the others.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentworld.errors import AgentWorldError
from agentworld.eval.closedloop.agent import ChatSettings, PolicyFactory, candidate_agents, chat_agents
from agentworld.eval.closedloop.episode import Trajectory, replay_real, run_real, run_sim
from agentworld.eval.closedloop.score import first_divergence, score_pairs, step_pairs, summarize, task_row
from agentworld.eval.closedloop.tasks import ClosedLoopTask
from agentworld.io import AsyncJournal, read_journal
from agentworld.models.base import ChatBackend
from agentworld.models.cache import ResponseCache

if TYPE_CHECKING:
    from agentworld.eval.closedloop.config import ClosedLoopConfig

JOURNAL = "episodes.jsonl"


@dataclass(frozen=True)
class Backends:
    """The run's agent (a backend, a policy factory, or None: the scripted agent), world model and judge."""

    agent: Any
    world: ChatBackend
    judge: ChatBackend | None = None


def _policies(config: ClosedLoopConfig, agent: Any, cache: ResponseCache) -> PolicyFactory:
    if agent is None:
        return candidate_agents
    if hasattr(agent, "complete"):
        return chat_agents(ChatSettings(agent, config.agent_name, cache, config.agent_max_tokens,
                                        config.agent_temperature))
    factory: PolicyFactory = agent
    return factory


async def _judge(pairs: list[dict[str, Any]], backend: ChatBackend, model: str, cache: ResponseCache) -> None:
    """Add the rubric total (0–100, as ``eval score`` scales it) to each pair; None where the judge failed."""
    from agentworld.domains.registry import DOMAINS
    from agentworld.eval.judge import JudgeSettings, judge_sample
    from agentworld.eval.score import normalise

    settings = JudgeSettings(model=model, temperature=0.0)
    for pair in pairs:
        sample = pair["sample"]
        row = await judge_sample(sample, pair["simulated"], pair["simulated"] or " ", DOMAINS[sample.domain],
                                 settings, backend, cache)
        pair["rubric"] = round(normalise(row.total_score), 2) if row.status == "ok" else None


async def run_tasks(config: ClosedLoopConfig, tasks: list[ClosedLoopTask], backends: Backends) -> list[str]:
    """Run every (task, arm) not yet journaled; returns one line per task that failed."""
    path = config.out / JOURNAL
    rows = [r for r in read_journal(path) if isinstance(r, dict)]
    reals = {r["task"]: Trajectory.from_json(r["trajectory"]) for r in rows if r.get("kind") == "real"}
    done = {(r["task"], r["arm"]) for r in rows if r.get("kind") == "arm"}
    caches = {name: ResponseCache(config.out / f"{name}.jsonl") for name in ("responses", "world", "judge")}
    start = _policies(config, backends.agent, caches["responses"])
    journal = AsyncJournal(path)
    gate = asyncio.Semaphore(config.concurrency)
    failures: list[str] = []

    async def one(task: ClosedLoopTask) -> None:
        async with gate:
            real = reals.get(task.id)
            if real is None:
                real = await run_real(task, start, config.seed)
                await journal.write({"kind": "real", "task": task.id, "domain": task.domain,
                                     "trajectory": real.to_json()})
            for arm in config.arms:
                if (task.id, arm) in done:
                    continue
                sim = await run_sim(task, start, backends.world, arm, real, config.seed, caches["world"])
                diverged = first_divergence(real, sim) is not None
                truth = await replay_real(task, sim, config.seed) if diverged else real
                pairs = step_pairs(task, sim, truth)
                if backends.judge is not None:
                    await _judge(pairs, backends.judge, config.judge_model or "", caches["judge"])
                await journal.write({"kind": "arm", **task_row(task, arm, real, sim,
                                                               score_pairs(task.domain, pairs))})

    async def guarded(task: ClosedLoopTask) -> None:
        try:
            await one(task)
        except (AgentWorldError, OSError, ValueError) as exc:
            failures.append(f"task {task.id!r}: {type(exc).__name__}: {exc}")

    try:
        await asyncio.gather(*(guarded(t) for t in tasks))
    finally:
        for cache in caches.values():
            cache.close()
        journal.close()
    return failures


def write_reports(config: ClosedLoopConfig, planned: int) -> dict[str, Any]:
    """``report.json`` (summary per domain and arm, every task's row) and ``report.html``, from the
    journal."""
    from agentworld.eval.closedloop.render import write_html
    from agentworld.io import atomic_write_text, dumps

    rows = [r for r in read_journal(config.out / JOURNAL) if isinstance(r, dict) and r.get("kind") == "arm"]
    order = {arm: i for i, arm in enumerate(config.arms)}
    rows.sort(key=lambda r: (r["domain"], r["task"], order.get(r["arm"], len(order))))
    report = {"format": "agentworld-closed-loop-report/1", "agent": config.agent_name, "model": config.model,
              "judge": config.judge_model, "seed": config.seed, "arms": list(config.arms),
              "tasks_planned": planned,
              "tasks_finished": len({r["task"] for r in rows}), "summary": summarize(rows),
              "tasks": [{k: v for k, v in r.items() if k != "kind"} for r in rows]}
    atomic_write_text(config.out / "report.json", dumps(report) + "\n")
    write_html(report, config.out / "report.html")
    return report

"""Running the tasks of ``eval agent-predictions`` concurrently, resumably, with a progress bar.

Each task runs in its own real environment; at most ``concurrency`` at once. A task whose closing row
is in the journal is done and skipped; one cut short restarts with its journaled steps replayed
(:class:`~agentworld.eval.agentpred.episode.TaskRun`). A failing task (the agent unreachable after
its retries, the environment dying) does not stop the others: it is reported and left for a rerun.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from agentworld.errors import AgentWorldError
from agentworld.eval.agentpred.episode import AgentSettings, TaskRun
from agentworld.eval.agentpred.tasks import PredictionTask
from agentworld.io import AsyncJournal, read_journal
from agentworld.models.base import ChatBackend
from agentworld.models.cache import ResponseCache

if TYPE_CHECKING:
    from agentworld.eval.agentpred.config import AgentPredConfig

STEPS_FILE = "steps.jsonl"
RESPONSES_FILE = "responses.jsonl"


def _journaled(rows: list[Any]) -> tuple[set[str], dict[str, list[dict[str, Any]]]]:
    """Closed task ids, and each open task's finished steps in order (a contiguous prefix)."""
    closed = {r["task"] for r in rows if isinstance(r, dict) and "closed" in r}
    steps: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
    for row in rows:
        if isinstance(row, dict) and "step" in row and row.get("task") not in closed:
            steps[row["task"]][int(row["step"])] = row
    prefixes: dict[str, list[dict[str, Any]]] = {}
    for task, by_step in steps.items():
        prefix: list[dict[str, Any]] = []
        while len(prefix) + 1 in by_step:
            prefix.append(by_step[len(prefix) + 1])
        prefixes[task] = prefix
    return closed, prefixes


async def run_tasks(config: AgentPredConfig, tasks: list[PredictionTask], backend: ChatBackend) -> list[str]:
    """Run every task not yet closed; returns one line per task that failed."""
    from agentworld.report_style import StageProgress

    journal_path = config.out / STEPS_FILE
    closed, prefixes = _journaled(list(read_journal(journal_path)))
    todo = [t for t in tasks if t.id not in closed]
    agent = AgentSettings(backend=backend, model=config.agent_name, max_tokens=config.agent_max_tokens,
                          temperature=config.agent_temperature)
    cache = ResponseCache(config.out / RESPONSES_FILE)
    journal = AsyncJournal(journal_path)
    gate = asyncio.Semaphore(config.concurrency)
    failures: list[str] = []
    total = sum(t.planned_steps - len(prefixes.get(t.id, [])) for t in todo)
    try:
        with StageProgress(config.progress, total, ("steps",)) as advance:
            async def one(task: PredictionTask) -> None:
                async with gate:
                    run = TaskRun(task, agent, cache, journal, config.seed, prefixes.get(task.id, []),
                                  lambda: advance("steps"))
                    try:
                        await run.run()
                    except (AgentWorldError, OSError, ValueError) as exc:
                        failures.append(f"task {task.id!r}: {exc}")
            await asyncio.gather(*(one(t) for t in todo))
    finally:
        cache.close()
        journal.close()
    return failures

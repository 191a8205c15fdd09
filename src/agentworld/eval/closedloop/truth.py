"""Ground truth of ``eval closed-loop`` for the mock: the real episodes under the simulator's own messages.

Why capture rather than rebuild the messages: what the simulator sends (its system prompt, the
ledger's summary, how the history is rendered) is the simulator's business, so the rows are taken
from a run against a scripted world model that answers each request with the real observation of
the same turn. The mock server (``agentworld serve mock --data``) then replays exactly those
answers, and a closed-loop run against it must show no divergence and full outcome agreement — the
check that the measurement itself adds no gap. ``agentworld eval closed-loop-truth`` writes them
(:class:`TruthConfig`); only pydantic is imported at module level, for its ``--help``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from agentworld.eval.closedloop.config import ARM_NAMES, TruthConfig

if TYPE_CHECKING:
    from agentworld.eval.closedloop.agent import PolicyFactory
    from agentworld.eval.closedloop.episode import Trajectory
    from agentworld.eval.closedloop.tasks import ClosedLoopTask
    from agentworld.models.base import ChatRequest


def write_truth(config: TruthConfig) -> int:
    """Record ``config.tasks`` for real and write the rows to ``config.out``; the number of rows.

    Raises:
        AgentWorldError: ``out`` exists, a task lists no candidates, or the tasks do not read.
    """
    from agentworld.errors import AgentWorldError
    from agentworld.eval.closedloop.agent import candidate_agents
    from agentworld.eval.closedloop.tasks import load_tasks
    from agentworld.io import atomic_write_jsonl

    if config.out.exists():
        raise AgentWorldError(f"{config.out} exists: give a new file")
    tasks = load_tasks(config.tasks)
    if bare := [t.id for t in tasks if not t.candidates]:
        raise AgentWorldError(f"{config.tasks}: task {bare[0]!r} lists no candidates for the scripted agent")
    reals = record_real(tasks, candidate_agents, config.seed)
    rows = truth_rows(tasks, reals, candidate_agents, seed=config.seed)
    atomic_write_jsonl(config.out, rows)
    return len(rows)


def record_real(tasks: Iterable[ClosedLoopTask], start: PolicyFactory,
                seed: int = 0) -> dict[str, Trajectory]:
    """Each task's real episode (what ``eval closed-loop`` journals as the task's real run)."""
    from agentworld.eval.closedloop.episode import run_real

    async def run() -> dict[str, Trajectory]:
        return {task.id: await run_real(task, start, seed) for task in tasks}
    return asyncio.run(run())


def truth_rows(tasks: Iterable[ClosedLoopTask], reals: Mapping[str, Trajectory], start: PolicyFactory,
               arms: Iterable[str] = ARM_NAMES, seed: int = 0) -> list[dict[str, Any]]:
    """AgentWorldBench rows whose messages are what the simulator sends under each arm, answered with
    the real observation of the same turn (the setup's are never asked: the simulator is given them)."""
    from agentworld.eval.closedloop.episode import run_sim
    from agentworld.models.scripted import ScriptedBackend

    rows: list[dict[str, Any]] = []
    for task in tasks:
        real = reals[task.id]
        truth = [obs for _, obs in real.setup] + [s.observation for s in real.steps]
        truth += [real.check] if real.check is not None else []
        for arm in arms:
            seen: list[ChatRequest] = []

            def answer(request: ChatRequest, truth: list[str] = truth, seen: list[ChatRequest] = seen) -> str:
                seen.append(request)
                turn = sum(m.role == "user" for m in request.messages) - 1
                shown = truth[turn] if turn < len(truth) else ""
                return f"<predicted_observation>\n{shown}\n</predicted_observation>"

            asyncio.run(run_sim(task, start, ScriptedBackend(default=answer), arm, real, seed))
            for i, request in enumerate(seen):
                system, *turns = request.messages
                prompt = [m.content for m in turns if m.role == "user"]
                turn = len(prompt) - 1
                response = [m.content for m in turns if m.role == "assistant"]
                response.append(truth[turn] if turn < len(truth) else "")
                rows.append({"task": f"closed-loop/{task.domain}", "id": f"cl-{task.id}-{arm}-{i}",
                             "system_str": system.content, "prompt": prompt, "response": response,
                             "turn_idx": len(prompt)})
    return rows

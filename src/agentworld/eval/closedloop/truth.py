"""Ground truth of ``eval closed-loop`` for the mock: the real episodes under the simulator's own messages.

Why capture rather than rebuild the messages: what the simulator sends (its system prompt, the
ledger's summary, how the history is rendered) is the simulator's business, so the rows are taken
from a run against a scripted world model that answers each request with the real observation of
the same turn. The mock server (``agentworld serve mock --data``) then replays exactly those
answers, and a closed-loop run against it must show no divergence and full outcome agreement — the
check that the measurement itself adds no gap.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agentworld.eval.closedloop.agent import PolicyFactory
from agentworld.eval.closedloop.episode import ARMS, Trajectory, run_real, run_sim
from agentworld.eval.closedloop.tasks import ClosedLoopTask
from agentworld.models.base import ChatRequest
from agentworld.models.scripted import ScriptedBackend


def record_real(tasks: Iterable[ClosedLoopTask], start: PolicyFactory,
                seed: int = 0) -> dict[str, Trajectory]:
    """Each task's real episode (what ``eval closed-loop`` journals as the task's real run)."""
    async def run() -> dict[str, Trajectory]:
        return {task.id: await run_real(task, start, seed) for task in tasks}
    return asyncio.run(run())


def truth_rows(tasks: Iterable[ClosedLoopTask], reals: Mapping[str, Trajectory], start: PolicyFactory,
               arms: Iterable[str] = ARMS, seed: int = 0) -> list[dict[str, Any]]:
    """AgentWorldBench rows whose messages are what the simulator sends under each arm, answered with
    the real observation of the same turn (the setup's are never asked: the simulator is given them)."""
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


def main(argv: list[str] | None = None) -> int:
    """``python -m agentworld.eval.closedloop.truth --tasks FILE --out TRUTH.jsonl``: the rows for
    ``agentworld serve mock --data`` (scripted agent, every arm). An existing ``--out`` is refused."""
    import argparse
    import sys

    from agentworld.errors import AgentWorldError
    from agentworld.eval.closedloop.agent import candidate_agents
    from agentworld.eval.closedloop.tasks import load_tasks
    from agentworld.io import atomic_write_jsonl

    parser = argparse.ArgumentParser(prog="python -m agentworld.eval.closedloop.truth",
                                     description="Record the real episodes of closed-loop tasks (scripted "
                                     "agent) as ground-truth rows for the mock server.")
    parser.add_argument("--tasks", type=Path, required=True, help="closed-loop tasks JSONL")
    parser.add_argument("--out", type=Path, required=True, help="rows to write (must not exist)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the episodes (as eval closed-loop's)")
    args = parser.parse_args(argv)
    try:
        if args.out.exists():
            raise AgentWorldError(f"{args.out} exists: give a new file")
        tasks = load_tasks(args.tasks)
        if bare := [t.id for t in tasks if not t.candidates]:
            raise AgentWorldError(f"{args.tasks}: task {bare[0]!r} lists no candidates for the scripted "
                                  "agent")
        reals = record_real(tasks, candidate_agents, args.seed)
        rows = truth_rows(tasks, reals, candidate_agents, seed=args.seed)
    except AgentWorldError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    atomic_write_jsonl(args.out, rows)
    print(f"wrote {len(rows)} rows for {len(tasks)} tasks to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

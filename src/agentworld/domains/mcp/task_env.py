"""A real MCP task as an agent's environment: on its real server, or in the simulator of that server.

Why both here: an agent trained in simulation and evaluated in reality must meet the same task the
same way in both, so the two differ only where the calls go and how success is judged — the real
server's state after the episode (:func:`~agentworld.domains.mcp.task_suite.check`), or, in the
simulator, the task's trace (:func:`~agentworld.domains.mcp.task_suite.trace_check`), the only thing a
simulator can check without the server. Both satisfy :class:`agentworld.train.agent_rft.TaskEnv`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agentworld.domains.mcp.task_suite import RealTask, check, start, trace_check
from agentworld.domains.spec import WorldSpec
from agentworld.models.base import ChatBackend


class RealTaskEnv:
    """A task on its real server: calls go to the server, the check reads the server's state.

    The server starts when the environment is made and stops in :meth:`finish`; ``real_calls``
    counts the tool calls it served (the cost a simulator saves).
    """

    def __init__(self, task: RealTask, tools: list[dict[str, Any]]) -> None:
        self.task, self.instruction, self.tools = task, task.instruction, tools
        self.env = start(task)
        self.real_calls = 0

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        self.real_calls += 1
        action = json.dumps({"name": name, "arguments": arguments})
        return await asyncio.to_thread(self.env.step, action)

    async def finish(self) -> tuple[bool, list[str]]:
        try:
            verdict = check(self.task, self.env)
        finally:
            self.env.close()
        return verdict.passed, verdict.reasons


def task_spec(task: RealTask, tools: list[dict[str, Any]]) -> WorldSpec:
    """The simulator's world for ``task``: its server's tools, and the files it starts from as the state."""
    files = {**task.files, **task.changes}
    shown = "\n".join(f"/workspace/{path}:\n{text}" for path, text in sorted(files.items()))
    state = f"The {task.server} server's folder /workspace holds:\n{shown}" if shown else ""
    return WorldSpec(domain="mcp", name=task.server, tools=tools, initial_state=state)


class SimTaskEnv:
    """The same task in the simulator (world model ``model``): no server runs; success is the trace check."""

    def __init__(self, task: RealTask, tools: list[dict[str, Any]], model: ChatBackend,
                 seed: int = 0) -> None:
        from agentworld.sim.session import Simulator

        self.task, self.instruction, self.tools = task, task.instruction, tools
        self.sim, self.spec, self.seed = Simulator(model), task_spec(task, tools), seed
        self.calls: list[dict[str, Any]] = []
        self._started = False

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        if not self._started:
            await self.sim.areset(self.spec, seed=self.seed)
            self._started = True
        self.calls.append({"tool": name, "arguments": arguments})
        return (await self.sim.astep(json.dumps({"name": name, "arguments": arguments}))).observation

    async def finish(self) -> tuple[bool, list[str]]:
        verdict = trace_check(self.task, self.calls)
        return verdict.passed, verdict.reasons

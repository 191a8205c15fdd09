"""A real MCP task in the simulator of its server: the Sim arm's environment of agent training.

Why: the Sim arm must meet the same tasks as the Real arm, with every call answered by a world model
instead of the server; the only success test a simulator can make without the server is the task's
trace (:func:`agentworld.domains.mcp.task_suite.trace_check`: the calls a successful episode makes),
so that is the reward here, while evaluation checks the real server's state.
"""

from __future__ import annotations

import json
from typing import Any

from agentworld.domains import TOOLS_DOMAIN
from agentworld.domains.mcp.task_suite import RealTask, trace_check
from agentworld.domains.spec import WorldSpec
from agentworld.models.base import ChatBackend
from agentworld.sim.session import Simulator


def task_spec(task: RealTask, tools: list[dict[str, Any]]) -> WorldSpec:
    """The simulator's world for ``task``: its server's tools, and the files it starts from as the state."""
    files = {**task.files, **task.changes}
    shown = "\n".join(f"/workspace/{path}:\n{text}" for path, text in sorted(files.items()))
    state = f"The {task.server} server's folder /workspace holds:\n{shown}" if shown else ""
    return WorldSpec(domain=TOOLS_DOMAIN, name=task.server, tools=tools, initial_state=state)


class SimTaskEnv:
    """The same task in the simulator (world model ``model``): no server runs; success is the trace check."""

    def __init__(self, task: RealTask, tools: list[dict[str, Any]], model: ChatBackend,
                 seed: int = 0) -> None:
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

"""A real MCP task as an agent's environment, on its real server.

Why: an agent trained in simulation is evaluated in reality; the two environments of one task differ
only in where the calls go and how success is judged — here the real server's state after the episode
(:func:`~agentworld.domains.mcp.task_suite.check`); in the simulator
(:class:`agentworld.train.sim_task_env.SimTaskEnv`) the task's trace. Both satisfy
:class:`agentworld.train.agent_rft.TaskEnv`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agentworld.domains.mcp.task_suite import RealTask, check, start


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

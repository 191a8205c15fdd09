"""A synthesized world's task as an agent's environment (:class:`agentworld.train.agent_rft.TaskEnv`).

Why: the Synth arm of agent training acts only in worlds ``synth envs`` made; each call goes through the
simulator (fault controls, ledger) to the world model given (offline: ``world-state``), and success is
the task's own rules over the final entity state and the trace (:func:`agentworld.synth.world.evaluate`).
"""

from __future__ import annotations

import json
from typing import Any

from agentworld.models.base import ChatBackend
from agentworld.synth.world import Task, ToolStep, World, evaluate, final_state


class WorldTaskEnv:
    """Task ``task`` of ``world``, answered by ``model`` in a simulator episode seeded with ``seed``."""

    def __init__(self, world: World, task: Task, model: ChatBackend, seed: int = 0) -> None:
        from agentworld.sim.session import Simulator

        self.world, self.task = world, task
        self.instruction, self.tools = task.instruction, [t.model_dump() for t in world.tools]
        self.sim, self.seed = Simulator(model), seed
        self.steps: list[ToolStep] = []
        self._started = False

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        if not self._started:
            await self.sim.areset(self.world.to_spec(), seed=self.seed)
            self._started = True
        result = await self.sim.astep(json.dumps({"name": name, "arguments": arguments}))
        self.steps.append(ToolStep(name, arguments, result.observation))
        return result.observation

    async def finish(self) -> tuple[bool, list[str]]:
        state = final_state(self.world, self.steps)
        verdict = evaluate(self.task, state, [{"tool": s.tool, "arguments": s.arguments} for s in self.steps])
        return verdict.passed, verdict.reasons

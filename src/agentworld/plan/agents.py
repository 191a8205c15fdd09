"""Who proposes candidate actions and continues imagined rollouts: a script, or an agent model.

Why an agent at all: with a horizon H > 1 an action is judged by where it leads, so after the
candidate the agent itself must choose the next imagined actions from the imagined screens (as
WebDreamer's agent does); and without candidates from the caller the agent proposes them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentworld.models.base import ChatBackend, ChatRequest
from agentworld.models.cache import ResponseCache
from agentworld.plan.records import ImaginedStep
from agentworld.plan.scorers import PlanContext
from agentworld.schema import Message
from agentworld.sim.types import WorldSpec

__all__ = ["Agent", "ModelAgent", "ScriptedAgent"]


class Agent(Protocol):
    """Proposes candidates for the next real step and continues an imagined rollout."""

    async def propose(self, context: PlanContext, k: int, cache: ResponseCache | None) -> list[Any]: ...

    async def next_action(self, context: PlanContext, imagined: Sequence[ImaginedStep], seed: int,
                          cache: ResponseCache | None) -> Any | None:
        """The next imagined action after ``imagined`` (None: the agent considers the task done)."""
        ...


Continuation = Callable[[PlanContext, Sequence[ImaginedStep]], Any]


@dataclass(frozen=True)
class ScriptedAgent:
    """A fixed list of candidates and a function that continues a rollout (tests, benchmarks).

    ``continuation(context, imagined)`` returns the next action or None (stop); without one the
    rollout ends after the candidate.
    """

    candidates: tuple[Any, ...] = ()
    continuation: Continuation | None = None
    calls: list[int] = field(default_factory=list, compare=False)

    async def propose(self, context: PlanContext, k: int, cache: ResponseCache | None) -> list[Any]:
        return list(self.candidates[:k])

    async def next_action(self, context: PlanContext, imagined: Sequence[ImaginedStep], seed: int,
                          cache: ResponseCache | None) -> Any | None:
        self.calls.append(len(imagined))
        return None if self.continuation is None else self.continuation(context, imagined)


@dataclass(frozen=True)
class ModelAgent:
    """An agent model behind an OpenAI-compatible endpoint, prompted as ``train rollout`` prompts it.

    Candidates are sampled: request ``i`` of ``k`` has seed ``i`` (and ``temperature``), duplicates
    dropped. Replies that hold no action are skipped for proposals and end a rollout.
    """

    backend: ChatBackend
    spec: WorldSpec
    temperature: float = 1.0
    max_tokens: int | None = None

    def _messages(self, context: PlanContext, imagined: Sequence[ImaginedStep]) -> tuple[Message, ...]:
        from agentworld.sim.agent import agent_system_prompt

        out = [Message(role="system", content=agent_system_prompt(self.spec, context.task)),
               Message(role="user", content=context.initial or "(the environment is ready)")]
        for turn in context.history:
            out += [Message(role="assistant", content=turn.action),
                    Message(role="user", content=turn.observation)]
        for step in imagined:
            out += [Message(role="assistant", content=json.dumps(step.action, ensure_ascii=False)),
                    Message(role="user", content=step.observation)]
        return tuple(out)

    async def _ask(self, messages: tuple[Message, ...], seed: int, cache: ResponseCache | None) -> Any | None:
        from agentworld.sim.agent import parse_agent_action
        from agentworld.sim.history import ActionError

        request = ChatRequest(messages=messages, temperature=self.temperature, max_tokens=self.max_tokens,
                              seed=seed)
        result = (await cache.call(self.backend, request)).result if cache is not None else \
            await self.backend.complete(request)
        try:
            return parse_agent_action(result.content, self.spec.domain)
        except ActionError:
            return None

    async def propose(self, context: PlanContext, k: int, cache: ResponseCache | None) -> list[Any]:
        import asyncio

        messages = self._messages(context, ())
        replies = await asyncio.gather(*(self._ask(messages, i, cache) for i in range(k)))
        out: list[Any] = []
        for action in replies:
            if action is not None and action not in out:
                out.append(action)
        return out

    async def next_action(self, context: PlanContext, imagined: Sequence[ImaginedStep], seed: int,
                          cache: ResponseCache | None) -> Any | None:
        return await self._ask(self._messages(context, imagined), seed, cache)

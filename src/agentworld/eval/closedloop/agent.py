"""The agent of ``eval closed-loop``: one policy, started afresh for each run of a task.

Why a fresh start per run: the real and the simulated episode must be driven by the *same* agent
from the same state, so nothing it learnt in one may leak into the other. Two kinds:

- :class:`ChatAgent`: a chat model (an OpenAI-compatible endpoint, or any :class:`ChatBackend` such
  as a scripted one from Python) asked once per step; its answers go through the run's response
  cache, so a resumed run does not ask again and the same conversation gets the same answer.
- :class:`CandidateAgent` (``--scripted-agent``, offline): tries the task's ``candidates`` in order,
  the next one only after an observation that shows an error (the domain's error patterns), and
  stops at the first that shows none — the retry loop a real agent runs, so a simulator that hides
  or invents an error makes the two episodes' actions diverge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from agentworld.domains.hooks import ActionError
from agentworld.eval.agentpred.prompt import first_message, step_message
from agentworld.eval.closedloop.tasks import ClosedLoopTask
from agentworld.models.base import ChatBackend, ChatRequest
from agentworld.models.cache import ResponseCache
from agentworld.schema import Message


class Policy(Protocol):
    """One episode's agent: given what the environment showed, the next action (None: it is done)."""

    async def act(self, observation: str) -> Any | None: ...


class PolicyFactory(Protocol):
    """Starts a fresh :class:`Policy` for a task, shown the initial observation and the setup."""

    def __call__(self, task: ClosedLoopTask, initial: str, setup: list[tuple[str, str]]) -> Policy: ...


@dataclass(frozen=True)
class ChatSettings:
    """How a chat agent is asked."""

    backend: ChatBackend
    model: str
    cache: ResponseCache
    max_tokens: int = 4096
    temperature: float = 0.0


class ChatAgent:
    """A chat model choosing actions towards the task's goal (``DONE`` ends the episode).

    Raises (from :meth:`act`):
        ActionError: a reply holding no action of the domain's form.
    """

    def __init__(self, settings: ChatSettings, task: ClosedLoopTask, initial: str,
                 setup: list[tuple[str, str]]) -> None:
        from agentworld.sim.agent import agent_system_prompt
        from agentworld.sim.types import WorldSpec

        self.settings, self.task = settings, task
        self.messages = [Message(role="system", content=agent_system_prompt(WorldSpec(domain=task.domain),
                                                                            task.goal))]
        self._first: tuple[str, list[tuple[str, str]]] | None = (initial, setup)

    async def act(self, observation: str) -> Any | None:
        from agentworld.sim.agent import parse_agent_action

        if self._first is not None:
            content, self._first = first_message(*self._first, None), None
        else:
            content = step_message(observation, None)
        self.messages.append(Message(role="user", content=content))
        s = self.settings
        request = ChatRequest(messages=tuple(self.messages), model=s.model, max_tokens=s.max_tokens,
                              temperature=s.temperature)
        reply = (await s.cache.call(s.backend, request)).result.content
        self.messages.append(Message(role="assistant", content=reply))
        return parse_agent_action(reply, self.task.domain)


def chat_agents(settings: ChatSettings) -> PolicyFactory:
    """A :class:`PolicyFactory` of chat agents sharing ``settings``."""
    def start(task: ClosedLoopTask, initial: str, setup: list[tuple[str, str]]) -> Policy:
        return ChatAgent(settings, task, initial, setup)
    return start


class CandidateAgent:
    """The scripted agent: the task's candidates in order, moving on only after an error."""

    def __init__(self, task: ClosedLoopTask) -> None:
        if not task.candidates:
            raise ActionError(f"task {task.id!r} lists no candidates for the scripted agent")
        self.task, self.tried = task, 0

    def _failed(self, observation: str) -> bool:
        import re

        from agentworld.domains.failures import is_error

        return is_error(observation, self.task.domain) or any(re.search(p, observation, re.M)
                                                              for p in self.task.errors)

    async def act(self, observation: str) -> Any | None:
        if self.tried and not self._failed(observation):
            return None
        if self.tried >= len(self.task.candidates):
            return None
        self.tried += 1
        return self.task.candidates[self.tried - 1]


def candidate_agents(task: ClosedLoopTask, initial: str, setup: list[tuple[str, str]]) -> Policy:
    """The :class:`PolicyFactory` of ``--scripted-agent``."""
    return CandidateAgent(task)

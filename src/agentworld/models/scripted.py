"""A scripted backend: queued replies and recorded calls, for tests and offline pipelines.

Modelled on openai-agents' ``FakeModel``: queue replies (strings, :class:`ChatResult`, exceptions
or functions of the request), run the code under test, then inspect ``calls`` and
``assert_complete()``.

>>> import asyncio
>>> from agentworld.models.scripted import ScriptedBackend
>>> from agentworld.models.base import ChatRequest
>>> from agentworld.schema import Message
>>> b = ScriptedBackend(["<predicted_observation>hi</predicted_observation>"])
>>> asyncio.run(b.complete(ChatRequest(messages=(Message(role="user", content="x"),)))).content
'<predicted_observation>hi</predicted_observation>'
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import TypeAlias

from agentworld.models.base import ChatRequest, ChatResult, register_backend

Reply: TypeAlias = "str | ChatResult | BaseException | Callable[[ChatRequest], str | ChatResult]"


class ScriptedBackend:
    """Answers from a queue; with ``default`` set, answers that once the queue is empty."""

    def __init__(self, replies: Iterable[Reply] = (), *, default: Reply | None = None,
                 name: str = "scripted") -> None:
        self.name = name
        self._queue: deque[Reply] = deque(replies)
        self._default = default
        self.calls: list[ChatRequest] = []

    def queue(self, *replies: Reply) -> None:
        self._queue.extend(replies)

    async def complete(self, request: ChatRequest) -> ChatResult:
        self.calls.append(request)
        if self._queue:
            reply = self._queue.popleft()
        elif self._default is not None:
            reply = self._default
        else:
            raise AssertionError(f"ScriptedBackend {self.name!r}: no reply queued for call {len(self.calls)}")
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply) and not isinstance(reply, ChatResult):
            reply = reply(request)
        if isinstance(reply, ChatResult):
            return reply
        return ChatResult(content=reply, model=request.model, source=self.name)

    def assert_complete(self) -> None:
        """Fail if queued replies were never consumed (the code under test made too few calls)."""
        if self._queue:
            raise AssertionError(f"ScriptedBackend {self.name!r}: {len(self._queue)} replies never used")


@register_backend("scripted")
def _scripted(replies: Iterable[Reply] = (), default: Reply | None = None) -> ScriptedBackend:
    return ScriptedBackend(replies, default=default)

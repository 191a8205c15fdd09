"""The simulator's model calls through the shared response cache (:mod:`agentworld.models.cache`).

Why: an episode replayed with the same seed sends the same requests, so answers already paid
for (by the simulator or by ``eval``) are served again (``source="cache"``) and a replay is exact
even against a sampling model.
"""

from __future__ import annotations

from typing import Any

from agentworld.models.base import ChatBackend, ChatRequest, ChatResult, Usage
from agentworld.models.cache import ResponseCache
from agentworld.models.parsing import split_thinking


class CallTally:
    """What the model calls of one step add up to (usage, latency, whether all came from the cache)."""

    def __init__(self) -> None:
        self.usage = Usage()
        self.latency_s = 0.0
        self.all_cached = True
        self.last: ChatResult | None = None

    def add(self, result: ChatResult, cached: bool) -> None:
        self.usage = Usage(prompt_tokens=self.usage.prompt_tokens + result.usage.prompt_tokens,
                           completion_tokens=self.usage.completion_tokens + result.usage.completion_tokens)
        self.latency_s += result.latency_s
        self.all_cached = self.all_cached and cached
        self.last = result

    def fields(self) -> dict[str, Any]:
        """``StepResult`` fields: summed usage and latency; reasoning and truncation of the last answer."""
        last = self.last
        reasoning = (last.reasoning or split_thinking(last.content)[1] or None) if last is not None else None
        return {"usage": self.usage, "latency_s": self.latency_s, "reasoning": reasoning,
                "truncated": bool(last and last.truncated)}


async def complete(model: ChatBackend, cache: ResponseCache | None, request: ChatRequest,
                   tally: CallTally) -> ChatResult:
    """Answer ``request`` from the cache or the model (storing the model's answer), counting it."""
    if cache is None:
        result, cached = await model.complete(request), False
    else:
        result, cached = await cache.call(model, request)
    tally.add(result, cached)
    return result

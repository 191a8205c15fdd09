"""The simulator's response cache: one world-model answer per (messages, sampling settings, seed).

Why: an episode replayed with the same seed sends the same requests, so answers already paid
for are served again (``source="cache"``) and a replay is exact even against a sampling model.
Entries live in memory and, optionally, in an append-only JSONL file (one ``{"key", "result"}``
row per answer, fsynced) so they survive the process; a torn last line is ignored on load.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from agentworld.io import JsonlJournal, read_journal
from agentworld.models.base import ChatBackend, ChatRequest, ChatResult, Usage
from agentworld.models.parsing import split_thinking
from agentworld.schema import Message


def cache_key(messages: Sequence[Message], settings: dict[str, Any], seed: int | None) -> str:
    """sha256 over the message list, the sampling settings and the seed (key order does not matter)."""
    payload = {"messages": [[m.role, m.content] for m in messages], "settings": settings, "seed": seed}
    return hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()


class SimCache:
    """In-memory answers keyed by :func:`cache_key`, optionally backed by a JSONL file.

    Args:
        path: JSONL file to load on start and append every new answer to; ``None`` keeps the
            cache in memory only. Several simulators may share one :class:`SimCache`.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._entries: dict[str, ChatResult] = {}
        self._journal: JsonlJournal | None = None
        self.hits = 0
        self.misses = 0
        if self.path is not None:
            for row in read_journal(self.path):
                if isinstance(row, dict) and isinstance(row.get("key"), str) and isinstance(row.get("result"),
                                                                                            dict):
                    self._entries[row["key"]] = ChatResult.model_validate(row["result"])
            self._journal = JsonlJournal(self.path)

    key = staticmethod(cache_key)

    def get(self, key: str) -> ChatResult | None:
        """The stored answer, counting a hit or a miss."""
        found = self._entries.get(key)
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def put(self, key: str, result: ChatResult) -> None:
        """Store an answer (and append it to the file, durably, before returning)."""
        if key in self._entries:
            return
        self._entries[key] = result
        if self._journal is not None:
            self._journal.append({"key": key, "result": result.model_dump(mode="json")})

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def close(self) -> None:
        """Close the file (the in-memory entries stay usable)."""
        if self._journal is not None:
            self._journal.close()
            self._journal = None


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


async def complete(model: ChatBackend, cache: SimCache | None, request: ChatRequest,
                   tally: CallTally) -> ChatResult:
    """Answer ``request`` from the cache or the model (storing the model's answer), counting it."""
    key = None
    result = None
    if cache is not None:
        settings = {"model": getattr(model, "name", ""), "max_tokens": request.max_tokens,
                    "temperature": request.temperature, "extra": request.extra}
        key = cache.key(request.messages, settings, request.seed)
        result = cache.get(key)
    cached = result is not None
    if result is None:
        result = await model.complete(request)
        if cache is not None and key is not None:
            cache.put(key, result)
    tally.add(result, cached)
    return result

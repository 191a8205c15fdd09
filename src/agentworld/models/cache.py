"""The response cache shared by evaluation and the simulator: one answer per request, one key function.

Why one cache: an answer the world model gave to ``eval`` is the answer the simulator would pay for
again when it sends the same request (and the other way round), so both look answers up with
:func:`response_key` and can share one file. Every new answer is appended to the cache's JSONL
files (``{"key", "result"}`` rows, fsynced in groups by :class:`~agentworld.io.AsyncJournal`)
before it is used, so a run killed at any moment resumes without sending a completed request again;
a torn last line is ignored on load.

Files written before the key was shared still answer: a miss under :func:`response_key` is looked
up under the two keys used before (:func:`legacy_keys`); new answers are stored under the new key.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import NamedTuple

import orjson

from agentworld.io import AsyncJournal, read_journal
from agentworld.models.base import ChatBackend, ChatRequest, ChatResult


def response_key(model: str, request: ChatRequest, attempt: int = 0) -> str:
    """The cache key of a request: ``sha256(...)#attempt``.

    The hash covers what decides the answer: ``model`` (the answering backend's ``name``, e.g.
    ``openai:qwen3``; ``ChatRequest.model`` is informational and left out, as backends ignore it),
    the messages' roles and contents, ``max_tokens``, ``temperature``, ``seed`` and ``extra``. The
    attempt number keeps retries of one request (a judge asked again after an unparsable verdict)
    apart.
    """
    payload = {"model": model, "messages": [[m.role, m.content] for m in request.messages],
               "max_tokens": request.max_tokens, "temperature": request.temperature, "seed": request.seed,
               "extra": request.extra}
    digest = hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return f"{digest}#{attempt}"


def legacy_keys(model: str, request: ChatRequest, attempt: int = 0) -> list[str]:
    """The keys of the same request before :func:`response_key`: eval's, and the simulator's (attempt 0)."""
    keys = [f"{request.key()}#{attempt}"]
    if attempt == 0:
        settings = {"model": model, "max_tokens": request.max_tokens, "temperature": request.temperature,
                    "extra": request.extra}
        payload = {"messages": [[m.role, m.content] for m in request.messages], "settings": settings,
                   "seed": request.seed}
        keys.append(hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest())
    return keys


class Cached(NamedTuple):
    """A result and whether it came from the cache."""

    result: ChatResult
    cached: bool


class ResponseCache:
    """Answers by :func:`response_key`, in memory and optionally in JSONL files.

    Args:
        path: file loaded on start and appended to with every new answer (``None``: memory only).
        shared: a second file read and written the same way (e.g. one cache for many runs).

    Several simulators and evaluation stages may share one instance, across event loops.

    Attributes:
        hits: requests answered from the cache by this instance.
        misses: requests sent to a backend by this instance.
    """

    def __init__(self, path: str | Path | None = None, shared: str | Path | None = None) -> None:
        files = [Path(f) for f in (shared, path) if f is not None]
        self._entries: dict[str, ChatResult] = {}
        for file in files:
            for row in read_journal(file):
                if isinstance(row, dict) and isinstance(row.get("key"), str) and isinstance(row.get("result"),
                                                                                            dict):
                    self._entries[row["key"]] = ChatResult.model_validate(row["result"])
        self._journals = [AsyncJournal(file) for file in reversed(files)]
        self.hits = 0
        self.misses = 0

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def keys(self) -> list[str]:
        return list(self._entries)

    def lookup(self, model: str, request: ChatRequest, attempt: int = 0) -> ChatResult | None:
        """The stored answer to ``request`` from backend ``model`` (under its key or a legacy one)."""
        for key in (response_key(model, request, attempt), *legacy_keys(model, request, attempt)):
            found = self._entries.get(key)
            if found is not None:
                return found
        return None

    async def call(self, backend: ChatBackend, request: ChatRequest, attempt: int = 0) -> Cached:
        """The cached answer for (backend, request, attempt), else the backend's, made durable first."""
        cached = self.lookup(backend.name, request, attempt)
        if cached is not None:
            self.hits += 1
            return Cached(cached, True)
        result = await backend.complete(request)
        self.misses += 1
        key = response_key(backend.name, request, attempt)
        row = {"key": key, "result": result.model_dump(mode="json")}
        await asyncio.gather(*(journal.write(row) for journal in self._journals))
        self._entries[key] = result
        return Cached(result, False)

    def close(self) -> None:
        """Close the files (the in-memory entries stay usable)."""
        for journal in self._journals:
            journal.close()
        self._journals = []

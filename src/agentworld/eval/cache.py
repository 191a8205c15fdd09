"""Durable journals with group commit, and the response cache keyed by request.

Every completed request is appended to ``cache.jsonl`` before its result is used, so a run killed
at any moment can be resumed without sending a completed request again. Writes are batched: rows
that arrive while a write is in progress are written and fsynced together, in a worker thread, so
the event loop never waits on the disk and a row is acknowledged only once it is durable.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agentworld.io import JsonlJournal, dumps, read_journal
from agentworld.models.base import ChatRequest, ChatResult


class AsyncJournal(JsonlJournal):
    """A :class:`JsonlJournal` whose appends are awaited and fsynced in batches (group commit)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self._pending: list[tuple[str, asyncio.Future[None]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def write(self, row: Any) -> None:
        """Append ``row``; returns once it is on disk (flushed and fsynced)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((dumps(row) + "\n", future))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._drain())
        await future

    def _write_lines(self, lines: list[str]) -> None:
        self._handle.write("".join(lines))
        self._handle.flush()
        os.fsync(self._handle.fileno())

    async def _drain(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                await asyncio.to_thread(self._write_lines, [line for line, _ in batch])
            except BaseException as exc:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                raise
            for _, future in batch:
                if not future.done():
                    future.set_result(None)


def cache_key(request: ChatRequest, attempt: int) -> str:
    """``request.key() + "#" + attempt``: retries of one request are distinct cache entries."""
    return f"{request.key()}#{attempt}"


class ResponseCache:
    """Completed responses by cache key, backed by the run's ``cache.jsonl`` (and an optional shared file).

    Attributes:
        hits: requests answered from the cache in this process.
        misses: requests sent to a backend in this process.
    """

    def __init__(self, path: Path, shared: Path | None = None) -> None:
        self._entries: dict[str, ChatResult] = {}
        for file in (shared, path):
            if file is not None:
                for row in read_journal(file):
                    if isinstance(row, dict) and "key" in row and "result" in row:
                        self._entries[row["key"]] = ChatResult.model_validate(row["result"])
        self._journals = [AsyncJournal(path)] + ([AsyncJournal(shared)] if shared is not None else [])
        self.hits = 0
        self.misses = 0

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def keys(self) -> list[str]:
        return list(self._entries)

    async def call(self, request: ChatRequest, attempt: int,
                   send: Callable[[ChatRequest], Awaitable[ChatResult]]) -> tuple[ChatResult, bool]:
        """The cached result for (request, attempt), else ``send(request)`` made durable first.

        Returns the result and whether it came from the cache.
        """
        key = cache_key(request, attempt)
        cached = self._entries.get(key)
        if cached is not None:
            self.hits += 1
            return cached, True
        result = await send(request)
        self.misses += 1
        row = {"key": key, "result": result.model_dump(mode="json")}
        await asyncio.gather(*(journal.write(row) for journal in self._journals))
        self._entries[key] = result
        return result, False

    def close(self) -> None:
        for journal in self._journals:
            journal.close()

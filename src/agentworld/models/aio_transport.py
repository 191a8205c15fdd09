"""The HTTP transport of :class:`~agentworld.models.openai_compat.OpenAIBackend`: aiohttp, one pool per loop.

Why aiohttp and not httpx (which the ``openai`` SDK uses): at a thousand concurrent sessions the
backend's client was most of a ``serve http`` process's CPU. httpx's connection pool re-checks
every pooled connection (a ``poll`` and a ``getpeername`` on each idle socket) whenever a request
enters or leaves it, so one request costs time linear in the pool, and its pure-Python HTTP/1.1
layers cost more again: measured against the mock server on this machine, 4.4 ms of CPU per
request with httpx2 (even with the pool split in clients of 40 connections) against 1.7 ms with
aiohttp, whose connector hands out a free connection in constant time and parses in C.

An ``aiohttp.ClientSession`` belongs to the event loop it was made on, while a backend is built
before any loop runs and may serve several ``asyncio.run`` calls in turn; so the session is made
on first use and made again when the running loop has changed. aiohttp is imported on first use
too (it takes longer to import than a command's ``--help`` should).

Every answer is read in chunks and counted (:class:`~agentworld.http_limits.BodyLimit`): past
``max_response_bytes`` the read stops with a :class:`~agentworld.http_limits.ResponseTooLargeError`
naming the URL (which holds no credential: :func:`~agentworld.models.openai_compat.split_credentials`
took them out) and the cap. aiohttp's own limits bound the rest: 128 header lines of at most 8 KiB,
and decompression in steps (``aiohttp>=3.14.1``), so a compressed answer is counted as it expands.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from dataclasses import dataclass
from typing import Any

from agentworld import http_limits
from agentworld.errors import one_line


class TransportFailure(Exception):
    """No HTTP answer: ``kind`` is ``"timeout"`` or ``"connection"`` (both worth another attempt)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class RawResponse:
    """An HTTP answer read to the end: status, headers (case-insensitive ``get``), body bytes."""

    status_code: int
    headers: Any
    content: bytes
    reason_phrase: str

    @property
    def text(self) -> str:
        """The body as text (UTF-8, undecodable bytes replaced)."""
        return self.content.decode("utf-8", errors="replace")


class AioTransport:
    """``POST``/``GET`` relative to a base URL with fixed headers, query and Basic auth.

    Args:
        base_url: ends with ``/``; paths are joined to it.
        headers: sent with every request.
        params: query parameters sent with every request.
        auth: ``(user, password)`` for HTTP Basic auth, or None.
        timeout_s: per-request total timeout; connecting gets at most 30 s of it.
        connections: most connections open at once.
        max_response_bytes: the most bytes read of one answer; None takes
            ``$AGENTWORLD_MAX_RESPONSE_BYTES`` or 32 MiB (:func:`agentworld.http_limits.max_response_bytes`).
    """

    def __init__(self, base_url: str, *, headers: dict[str, str], params: dict[str, str] | None,
                 auth: tuple[str, str] | None, timeout_s: float, connections: int,
                 max_response_bytes: int | None = None) -> None:
        self.base_url = base_url
        self.headers = dict(headers)
        if auth is not None:  # Basic auth replaces a bearer token, as in httpx and curl
            token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode("ascii")
            self.headers["Authorization"] = f"Basic {token}"
        self.params = params or None
        self.timeout_s = timeout_s
        self.connections = connections
        self.max_response_bytes = http_limits.max_response_bytes(max_response_bytes)
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _current(self) -> Any:
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            if self._session is not None:
                _drop(self._session)
            self._session = aiohttp.ClientSession(
                headers=self.headers, trust_env=True,
                connector=aiohttp.TCPConnector(limit=self.connections, limit_per_host=self.connections,
                                               keepalive_timeout=60),
                timeout=aiohttp.ClientTimeout(total=self.timeout_s, sock_connect=min(self.timeout_s, 30.0)))
            self._loop = loop
        return self._session

    async def request(self, method: str, path: str, *, content: bytes | None = None,
                      timeout_s: float | None = None) -> RawResponse:
        """Send one request and read the whole answer, at most :attr:`max_response_bytes` of it.

        Raises:
            TransportFailure: timed out, or no answer (refused, reset, closed mid-answer).
            ResponseTooLargeError: the answer is longer than the cap (declared or as it arrived).
        """
        import aiohttp

        session = self._current()
        options: dict[str, Any] = {"params": self.params}
        if content is not None:
            options["data"] = content
        if timeout_s is not None:
            options["timeout"] = aiohttp.ClientTimeout(total=timeout_s, sock_connect=min(timeout_s, 30.0))
        try:
            async with session.request(method, self.base_url + path, **options) as response:
                body = http_limits.BodyLimit(self.base_url + path, self.max_response_bytes)
                body.declared(response.headers.get("Content-Length"))
                async for chunk in response.content.iter_any():  # what arrived; at most the stream's buffer
                    body.add(chunk)
                return RawResponse(response.status, response.headers, body.bytes(), response.reason or "")
        except (TimeoutError, aiohttp.ServerTimeoutError):
            raise TransportFailure("timeout", f"timed out after {timeout_s or self.timeout_s}s") from None
        except aiohttp.ClientError as exc:
            raise TransportFailure("connection", one_line(f"{type(exc).__name__}: {exc}")) from None

    def __del__(self) -> None:
        # A backend dropped without ``aclose`` (or after its loop ended) must not make aiohttp print
        # "Unclosed client session" at exit: httpx never did, and commands' stderr is for their users.
        if self._session is not None:
            _drop(self._session)
            self._session = None

    async def aclose(self) -> None:
        """Close the session of the running loop (idempotent; one of a finished loop is dropped)."""
        session, self._session = self._session, None
        if session is None or session.closed:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            await session.close()
        else:
            _drop(session)


def _drop(session: Any) -> None:
    """Close a session made on another (finished) loop without awaiting on it: its connections are
    closed where that still works, and it is marked closed so aiohttp does not warn it was left open."""
    connector = session.connector
    if connector is not None:
        with contextlib.suppress(RuntimeError):  # a closed loop: the sockets go with the garbage collector
            connector._close()  # the synchronous part of close(): no task on a loop that no longer runs
    session._connector = None  # ClientSession.closed reads it

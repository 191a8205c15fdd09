"""Handshake-era MCP sessions over streamable HTTP, each request answered in its own HTTP task.

Handshake-era clients (protocol revisions up to 2025-11-25: ``initialize``, then requests inside an
``Mcp-Session-Id`` session; verl's MCP tool, fastmcp 2, older SDKs) are served here; the stateless
2026-07-28 revision and everything this module does not own go to the SDK's session manager.

Why not the SDK's stateful transport: there, every session is a task reading a memory stream, and a
request crosses the event loop about seven times (the HTTP task hands it to the session's stream,
the session's dispatcher spawns a task for it, the answer goes back through the session's write
stream and a router task to the request's own stream). Each crossing waits behind whatever else is
ready, so with 1,000 sessions on a busy loop the step overhead's p99 was 18–35 ms against 3 ms for
the stateless revision (``benchmarks/bench_scale.py``; see docs/guides/scale.md). Here the
request is handled by the SDK's own handler kernel (:class:`~mcp.server.runner.ServerRunner`: the
same initialize negotiation, validation and error mapping) directly in the HTTP task, in JSON
response mode; a session is a :class:`~mcp.server.connection.Connection` and a kernel, no task.

What a session keeps of the SDK's behaviour: ``initialize`` answers with the session id, requests
without it or with an unknown one are refused (400 / 404), ``DELETE`` ends it, an idle session ends
after ``idle_timeout_s`` (the server's ``--idle-timeout-s``), at most ``max_sessions`` are open (503
beyond), the DNS-rebinding checks of the SDK's transport apply, and ending a session unwinds its
connection's ``exit_stack`` (where the simulator's episode is released), and the client's
``notifications/cancelled`` interrupts the request it names (answered ``REQUEST_CANCELLED``). The
server cannot send requests to the client (no back-channel: JSON responses, no GET stream), as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import orjson
import pydantic_core
from mcp.server.connection import Connection
from mcp.server.runner import ServerRunner, aclose_shielded
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params, handler_exception_to_error_data
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    jsonrpc_message_adapter,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response

from agentworld.serve.sessions import in_background, reap_interval

log = logging.getLogger(__name__)

SESSION_HEADER = "mcp-session-id"
_SESSION_KEY = SESSION_HEADER.encode()
_VERSION_KEY = b"mcp-protocol-version"
_TRANSPORT = TransportContext(kind="streamable-http", can_send_request=False)
REQUEST_CANCELLED = -32800
"""The error a cancelled request is answered with (``mcp.server.streamable_http.REQUEST_CANCELLED``)."""


class _NoChannel:
    """No channel to the client (JSON responses, no GET stream): requests refused, notifications dropped."""

    async def send_raw_request(self, method: str, params: Mapping[str, Any] | None,
                               opts: CallOptions | None = None) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None,
                     opts: CallOptions | None = None) -> None:
        log.debug("dropped %s: no channel to the client in JSON-response mode", method)


@dataclass
class _Exchange(_NoChannel):
    """The SDK's ``DispatchContext`` for one HTTP request: one JSON answer, nothing sent before it."""

    request_id: RequestId | None
    message_metadata: ServerMessageMetadata
    transport: TransportContext = _TRANSPORT
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    can_send_request: bool = False

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        return None


@dataclass
class _Session:
    runner: ServerRunner[Any]
    connection: Connection
    last_used: float
    in_flight: int = 0
    running: dict[str, anyio.CancelScope] = field(default_factory=dict)
    """The requests being answered, by id: what ``notifications/cancelled`` can interrupt."""


def _json(status: int, body: Any = None, session_id: str | None = None) -> Response:
    headers = {SESSION_HEADER: session_id} if session_id else None
    content = None if body is None else orjson.dumps(body)
    return Response(content, status_code=status, media_type="application/json", headers=headers)


def _error(status: int, message: str, code: int = INVALID_REQUEST, request_id: RequestId | None = None,
           session_id: str | None = None) -> Response:
    return _json(status, {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}},
                 session_id)


class HandshakeSessions:
    """ASGI app for ``/mcp``: handshake-era sessions here, everything else to ``fallback`` (the SDK).

    Args:
        server: the low-level MCP server whose handlers answer (its kernel runs per request).
        fallback: the SDK's streamable-HTTP app (the stateless revision, and anything this
            class does not own: a request without a session that is not ``initialize``).
        security: the DNS-rebinding settings the SDK's transport would apply.
        idle_timeout_s / max_sessions: the server's limits (``--idle-timeout-s``, ``--max-sessions``).
    """

    def __init__(self, server: Any, fallback: Any, *, security: TransportSecuritySettings | None,
                 idle_timeout_s: float, max_sessions: int, clock: Any = time.monotonic) -> None:
        self.server = server
        self.fallback = fallback
        self.security = TransportSecurityMiddleware(security)
        self.idle_timeout_s = idle_timeout_s
        self.max_sessions = max_sessions
        self._clock = clock
        self._sessions: dict[str, _Session] = {}
        self._lifespan_state: Any = None

    def __len__(self) -> int:
        return len(self._sessions)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The server's life: its MCP lifespan entered once, idle sessions reaped, all closed at the end."""
        async with self.server.lifespan(self.server) as state:
            self._lifespan_state = state
            try:
                async with in_background(self._reap()):
                    yield
            finally:
                for session_id in list(self._sessions):
                    await self._close(session_id)

    async def _reap(self) -> None:
        interval = reap_interval(self.idle_timeout_s)
        while True:
            await asyncio.sleep(interval)
            now = self._clock()
            idle = [sid for sid, s in self._sessions.items()
                    if not s.in_flight and now - s.last_used > self.idle_timeout_s]
            for session_id in idle:
                log.info("MCP session %s ended after %g s idle", session_id, self.idle_timeout_s)
                await self._close(session_id)

    async def _close(self, session_id: str) -> None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            await aclose_shielded(session.connection)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = {k: v for k, v in scope["headers"] if k in (_SESSION_KEY, _VERSION_KEY)}
        version = headers.get(_VERSION_KEY)
        if version is not None and version.decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS:
            await self.fallback(scope, receive, send)  # the stateless revision (and unknown versions)
            return
        session_id = headers[_SESSION_KEY].decode("latin-1") if _SESSION_KEY in headers else None
        request = Request(scope, receive)
        if scope["method"] not in ("POST", "DELETE") or (session_id is None and scope["method"] != "POST"):
            await self.fallback(scope, receive, send)
            return
        refused = await self.security.validate_request(request, is_post=scope["method"] == "POST")
        if refused is not None:
            await refused(scope, receive, send)
            return
        if session_id is not None and session_id not in self._sessions:
            await _error(404, "Session not found")(scope, receive, send)
            return
        if scope["method"] == "DELETE":
            assert session_id is not None
            await self._close(session_id)
            await _json(200, None)(scope, receive, send)
            return
        response = await self._post(request, session_id)
        if response is None:  # not ours: a request without a session that is not initialize
            body = await request.body()
            await self.fallback(scope, _replay(body, receive), send)
            return
        await response(scope, receive, send)

    async def _post(self, request: Request, session_id: str | None) -> Response | None:
        has_json, _ = check_accept_headers(request)
        if not has_json:
            return _error(406, "Not Acceptable: Client must accept application/json", session_id=session_id)
        body = await request.body()
        try:
            message = jsonrpc_message_adapter.validate_python(pydantic_core.from_json(body), by_name=False)
        except ValueError as exc:
            if isinstance(exc, ValidationError):
                return _error(400, f"Validation error: {exc}", INVALID_PARAMS, session_id=session_id)
            return _error(400, f"Parse error: {exc}", PARSE_ERROR, session_id=session_id)
        if session_id is None:
            if not (isinstance(message, JSONRPCRequest) and message.method == "initialize"):
                return None
            return await self._initialize(request, message)
        session = self._sessions.get(session_id)
        if session is None:  # ended (DELETE, idle) while this request's body was read
            return _error(404, "Session not found")
        session.in_flight += 1
        try:
            if isinstance(message, JSONRPCRequest):
                return _json(200, await self._interruptible(session, request, message), session_id)
            if isinstance(message, JSONRPCNotification):
                if message.method == "notifications/cancelled":
                    cancelled = session.running.get(str(cancelled_request_id_from_params(message.params)))
                    if cancelled is not None:
                        cancelled.cancel()
                await session.runner.on_notify(_exchange(request, None), message.method, message.params)
            return _json(202, None, session_id)  # notifications and responses: accepted
        finally:
            session.in_flight -= 1
            session.last_used = self._clock()

    async def _initialize(self, request: Request, message: JSONRPCRequest) -> Response:
        if len(self._sessions) >= self.max_sessions:
            log.warning("refusing a new MCP session: %d are open", len(self._sessions))
            return _error(503, "Too many open sessions", INTERNAL_ERROR)
        session_id = uuid.uuid4().hex
        connection = Connection.for_loop(_NoChannel(), session_id=session_id)
        session = _Session(ServerRunner(self.server, connection, self._lifespan_state), connection,
                           last_used=self._clock(), in_flight=1)
        self._sessions[session_id] = session
        try:
            answer = await self._answer(session, request, message)
        except BaseException:
            await self._close(session_id)
            raise
        finally:
            session.in_flight -= 1
            session.last_used = self._clock()
        if "error" in answer:  # nothing was established
            await self._close(session_id)
            return _json(200, answer)
        return _json(200, answer, session_id)

    async def _interruptible(self, session: _Session, request: Request,
                             message: JSONRPCRequest) -> dict[str, Any]:
        """:meth:`_answer`, interrupted by the client's ``notifications/cancelled`` for its id.

        As the SDK's handshake-era transport does, a cancelled request is answered with
        ``REQUEST_CANCELLED`` (the HTTP request needs an answer; the client ignores it).
        """
        key = str(message.id)
        scope = session.running[key] = anyio.CancelScope()
        try:
            with scope:
                return await self._answer(session, request, message)
            return {"jsonrpc": "2.0", "id": message.id,
                    "error": {"code": REQUEST_CANCELLED, "message": "Request cancelled"}}
        finally:
            if session.running.get(key) is scope:
                del session.running[key]

    async def _answer(self, session: _Session, request: Request, message: JSONRPCRequest) -> dict[str, Any]:
        """The JSON-RPC answer to one request, by the SDK's kernel (its errors mapped as the SDK does)."""
        try:
            result = await session.runner.on_request(_exchange(request, message.id), message.method,
                                                     message.params)
        except Exception as exc:
            error = handler_exception_to_error_data(exc)
            if error is None:
                log.exception("handler for %r raised", message.method)
                error = ErrorData(code=INTERNAL_ERROR, message=f"Internal error ({type(exc).__name__})")
            reply: Any = JSONRPCError(jsonrpc="2.0", id=message.id, error=error)
        else:
            reply = JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result)
        out: dict[str, Any] = reply.model_dump(mode="json", by_alias=True, exclude_unset=True)  # as the SDK
        return out


def _exchange(request: Request, request_id: RequestId | None) -> _Exchange:
    return _Exchange(request_id=request_id, message_metadata=ServerMessageMetadata(
        request_context=request, can_send_request=False))


def _replay(body: bytes, receive: Any) -> Any:
    """``receive`` for an app that reads a body this app already read."""
    sent = False

    async def replay() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay

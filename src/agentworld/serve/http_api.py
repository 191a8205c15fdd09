"""The HTTP session API: many isolated simulator episodes behind one FastAPI app.

``POST /v1/sessions`` opens an episode, ``POST /v1/sessions/{id}/step`` advances it,
``GET /v1/sessions/{id}/state`` shows it, ``DELETE /v1/sessions/{id}`` closes it and
``GET /v1/health`` answers without a token (for load balancers). Requests and responses are
the records of :mod:`agentworld.sim.types`, so the Python API and HTTP speak one schema.

Protection is done in one pure-ASGI middleware (cheaper than ``BaseHTTPMiddleware`` on every
step): an optional bearer token compared in constant time, and a request-body limit enforced
before anything is parsed (413). Errors are JSON ``{"detail": message}``: unknown session 404,
malformed action 422, session limit 429, model failure 502. An unknown MCP tool is not an
HTTP error: the simulator answers a ``StepResult`` with ``is_error`` like the real tool would.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentworld.errors import AgentWorldError, BackendError
from agentworld.models.base import ChatBackend
from agentworld.serve.sessions import (
    SessionLimitReached,
    SessionManager,
    SessionManagerConfig,
    SessionNotFound,
    SimulatorFactory,
    make_backend,
    simulator_factory,
)
from agentworld.sim.types import SessionState, StepResult, WorldSpec

log = logging.getLogger(__name__)

API_TOKEN_ENV = "AGENTWORLD_TOKEN"
_OPEN_PATHS = frozenset({"/v1/health"})


class CreateSessionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    spec: WorldSpec = Field(default_factory=WorldSpec)
    seed: int = 0


class CreateSessionResponse(BaseModel):
    session_id: str
    observation: str


class StepRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: str | dict[str, Any] | list[Any]
    """Terminal keystroke list, MCP ``{"tool_name", "arguments"}`` call, or text (by domain)."""


def _json(status: int, body: Any) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


def _model(status: int, record: BaseModel) -> Response:
    return Response(record.model_dump_json(), status_code=status, media_type="application/json")


class GuardMiddleware:
    """Bearer-token check and request-body limit, before routing and parsing.

    The body is buffered (at most ``max_body_bytes``) and replayed to the app, so a body sent
    without ``Content-Length`` (chunked) is limited too.
    """

    def __init__(self, app: ASGIApp, *, token: str | None, max_body_bytes: int) -> None:
        self.app = app
        self._token = token.encode() if token else None
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _timed(send, time.perf_counter())
        headers = dict(scope["headers"])
        if self._token is not None and scope["path"] not in _OPEN_PATHS and not self._authorised(headers):
            await _send(send, 401, {"detail": "missing or wrong bearer token (Authorization: Bearer …)"},
                        extra=[(b"www-authenticate", b"Bearer")])
            return
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            await _send(send, 413, {"detail": f"request body over {self.max_body_bytes} bytes"})
            return
        if scope["method"] in ("GET", "HEAD", "DELETE") and length is None:
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_body_bytes:
                await _send(send, 413, {"detail": f"request body over {self.max_body_bytes} bytes"})
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        replay: list[Message] = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replay_receive() -> Message:
            return replay.pop() if replay else await receive()

        await self.app(scope, replay_receive, send)

    def _authorised(self, headers: dict[bytes, bytes]) -> bool:
        assert self._token is not None
        scheme, _, given = headers.get(b"authorization", b"").partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self._token)


def _timed(send: Send, started: float) -> Send:
    """Add ``Server-Timing: app;dur=<ms>`` (request received → response start) to every response.

    Clients subtract the model's time (``StepResult.latency_s``) from it to get the server's own
    overhead per step, free of their HTTP stack (``benchmarks/bench_sessions.py`` does).
    """

    async def timed_send(message: Message) -> None:
        if message["type"] == "http.response.start":
            took = (time.perf_counter() - started) * 1000
            message = {**message, "headers": [*message.get("headers", []),
                                              (b"server-timing", f"app;dur={took:.3f}".encode())]}
        await send(message)

    return timed_send


async def _send(send: Send, status: int, body: Any, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    payload = orjson.dumps(body)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(payload)).encode()), *(extra or [])]})
    await send({"type": "http.response.body", "body": payload})


def create_app(config: SessionManagerConfig, *, factory: SimulatorFactory | None = None,
               backend: ChatBackend | None = None) -> FastAPI:
    """The FastAPI app; ``app.state.sessions`` is its :class:`SessionManager`.

    Args:
        config: serving settings.
        factory: builds a simulator per session; default: real simulators on one shared backend.
        backend: the shared model backend; default: an ``OpenAIBackend`` from ``config`` (closed on
            shutdown; a backend passed in is left to its owner).
    """
    owned: ChatBackend | None = None
    if factory is None:
        if backend is None:
            if not config.model_base_url:
                raise ValueError("model_base_url is required (the world model's OpenAI-compatible endpoint)")
            key = config.api_key.get_secret_value() if config.api_key else None
            backend = owned = make_backend(config.model_base_url, config.model, api_key=key,
                                           concurrency=config.concurrency)
        factory = simulator_factory(backend)
    sessions = SessionManager(factory, idle_timeout_s=config.idle_timeout_s, max_sessions=config.max_sessions)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        reaper = asyncio.get_running_loop().create_task(sessions.run_reaper())
        try:
            yield
        finally:
            reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reaper
            await sessions.aclose_all()
            closer = getattr(owned, "aclose", None)
            if closer is not None:
                await closer()

    app = FastAPI(title="agentworld simulator", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.sessions = sessions
    token = config.token.get_secret_value() if config.token else None
    app.add_middleware(GuardMiddleware, token=token, max_body_bytes=config.max_body_bytes)
    _add_error_handlers(app)

    @app.get("/v1/health")
    async def health() -> Response:
        return _json(200, {"status": "ok", "sessions": len(sessions)})

    @app.post("/v1/sessions", response_model=CreateSessionResponse)
    async def create_session(body: CreateSessionRequest) -> Response:
        session, observation = await sessions.create(body.spec, body.seed)
        return _model(200, CreateSessionResponse(session_id=session.id, observation=observation))

    @app.post("/v1/sessions/{session_id}/step", response_model=StepResult)
    async def step(session_id: str, body: StepRequest) -> Response:
        async with sessions.use(session_id) as session:
            result = await session.simulator.astep(body.action)
        return _model(200, result)

    @app.get("/v1/sessions/{session_id}/state", response_model=SessionState)
    async def state(session_id: str) -> Response:
        async with sessions.use(session_id) as session:
            return _model(200, session.simulator.state())

    @app.delete("/v1/sessions/{session_id}")
    async def close(session_id: str) -> Response:
        await sessions.close(session_id)
        return _json(200, {"session_id": session_id, "closed": True})

    return app


def _add_error_handlers(app: FastAPI) -> None:
    """Map agentworld errors to HTTP statuses with the error's own message."""

    async def not_found(_: Request, exc: Exception) -> Response:
        return _json(404, {"detail": str(exc)})

    async def limit(_: Request, exc: Exception) -> Response:
        return _json(429, {"detail": str(exc)})

    async def backend(_: Request, exc: Exception) -> Response:
        log.warning("model backend failed: %s", exc)
        return _json(502, {"detail": f"world model failed: {exc}"})

    async def invalid(_: Request, exc: Exception) -> Response:
        return _json(422, {"detail": str(exc)})

    app.add_exception_handler(SessionNotFound, not_found)
    app.add_exception_handler(SessionLimitReached, limit)
    app.add_exception_handler(BackendError, backend)
    app.add_exception_handler(AgentWorldError, invalid)

"""The HTTP session API: many isolated simulator episodes behind one FastAPI app.

``POST /v1/sessions`` opens an episode, ``POST /v1/sessions/{id}/step`` advances it,
``GET /v1/sessions/{id}/state`` shows it, ``DELETE /v1/sessions/{id}`` closes it and
``GET /v1/health`` answers without a token (for load balancers), ``GET /v1/endpoints`` (with one) a
pool's per-endpoint stats (:mod:`agentworld.models.pool`). Requests and responses are
the records of :mod:`agentworld.sim.types`, so the Python API and HTTP speak one schema.

The clients are untrusted: the token and the body limit act before parsing
(:class:`~agentworld.serve.guard.GuardMiddleware`); a world spec's tool schemas are compiled when
the session is created, so a schema that refers outside itself, uses a pattern RE2 cannot run or
is too large answers 422 there, and nothing is ever fetched (:mod:`agentworld.sim.toolschema`);
an action over ``max_argument_bytes`` answers 413. Errors are JSON ``{"detail": message}``:
unknown session 404, malformed request 422, session limit 429, model failure 502. An invalid
or unknown MCP tool call is not an HTTP error: the simulator answers a ``StepResult`` with
``is_error`` like the real tool would.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from agentworld.endpoints import secret
from agentworld.errors import AgentWorldError, BackendError
from agentworld.models.base import ChatBackend
from agentworld.redact import redact_text
from agentworld.serve.config import HttpServeConfig
from agentworld.serve.guard import GuardMiddleware
from agentworld.serve.net import allowed_host_names
from agentworld.serve.sessions import (
    SessionLimitReached,
    SessionManager,
    SessionNotFound,
    SimulatorFactory,
    simulator_factory,
)
from agentworld.sim.toolschema import json_size
from agentworld.sim.types import Seed, SessionState, StepResult, WorldSpec

if TYPE_CHECKING:
    from agentworld.synth.world_cache import WorldSpecCache

log = logging.getLogger(__name__)


class CreateSessionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    spec: WorldSpec = Field(default_factory=WorldSpec)
    seed: Seed = 0
    world: str | None = Field(None, max_length=1024)
    """A world folder, relative to the server's ``--worlds-root`` (instead of ``spec``)."""


class CreateSessionResponse(BaseModel):
    session_id: str
    observation: str


class StepRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    action: str | dict[str, Any] | list[Any]
    """Terminal keystroke list, MCP ``{"tool_name", "arguments"}`` call, or text (by domain)."""


def _json(status: int, body: Any) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


def _model(status: int, record: BaseModel) -> Response:
    return Response(record.model_dump_json(), status_code=status, media_type="application/json")


def create_app(config: HttpServeConfig, *, factory: SimulatorFactory | None = None,
               backend: ChatBackend | None = None) -> FastAPI:
    """The FastAPI app; ``app.state.sessions`` is its :class:`SessionManager`.

    Args:
        config: serving settings and the world model.
        factory: builds a simulator per session; default: real simulators on one shared backend.
        backend: the shared model backend; default: the one ``config`` names (built with
            :func:`agentworld.endpoints.build_backend` and closed on shutdown; a backend passed in
            is left to its owner).

    Raises:
        AgentWorldError: ``config`` names no usable world model.
    """
    owned: ChatBackend | None = None
    if factory is None:
        if backend is None:
            backend = owned = config.model_endpoint().backend(concurrency=config.concurrency,
                                                              max_tokens=config.max_tokens)
        factory = simulator_factory(backend)
    sessions = SessionManager(factory, idle_timeout_s=config.idle_timeout_s, max_sessions=config.max_sessions)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            async with sessions.reaping():
                yield
        finally:
            await sessions.aclose_all()
            closer = getattr(owned, "aclose", None)
            if closer is not None:
                await closer()

    app = FastAPI(title="agentworld simulator", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.sessions = sessions
    from agentworld.synth.world_cache import WorldSpecCache

    app.state.worlds = worlds = WorldSpecCache(config.max_cached_worlds)
    app.add_middleware(GuardMiddleware, token=secret(config.token), max_body_bytes=config.max_body_bytes,
                       allowed_hosts=allowed_host_names(config.host, config.allowed_hosts))
    _add_error_handlers(app, secrets=(secret(config.model_api_key), secret(config.token)))

    @app.get("/v1/health")
    async def health() -> Response:
        return _json(200, {"status": "ok", "sessions": len(sessions)})

    @app.get("/v1/endpoints")
    async def endpoints() -> Response:
        """A pool's per-endpoint stats (empty for one endpoint); behind the token, unlike health: it
        names the hosts the world model runs on."""
        stats = getattr(backend, "endpoint_stats", None)
        return _json(200, {"endpoints": stats() if stats is not None else []})

    @app.post("/v1/sessions", response_model=CreateSessionResponse)
    async def create_session(body: CreateSessionRequest) -> Response:
        if body.world is not None:
            if "spec" in body.model_fields_set:
                return _json(422, {"detail": "give spec or world, not both"})
            try:
                body = CreateSessionRequest(spec=await asyncio.to_thread(world_spec, config.worlds_root,
                                                                         body.world, worlds), seed=body.seed)
            except AgentWorldError as exc:
                return _json(422, {"detail": str(exc)})
        if body.spec.tools:  # compiled off the event loop: a client's schemas may be large
            from agentworld.sim.controls import ToolValidator

            await asyncio.to_thread(ToolValidator, body.spec.tools)
        check_domains = getattr(backend, "check_domains", None)
        if check_domains is not None:  # an offline corpus without this domain: refuse now, not per step
            try:
                check_domains([body.spec.domain])
            except AgentWorldError as exc:
                return _json(422, {"detail": str(exc)})
        session, observation = await sessions.create(body.spec, body.seed)
        return _model(200, CreateSessionResponse(session_id=session.id, observation=observation))

    @app.post("/v1/sessions/{session_id}/step", response_model=StepResult)
    async def step(session_id: str, body: StepRequest) -> Response:
        size = json_size(body.action)
        if size > config.max_argument_bytes:
            return _json(413, {"detail": f"action is {size} bytes of JSON, over the --max-argument-bytes "
                                         f"limit ({config.max_argument_bytes})"})
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


def world_spec(root: Path | None, name: str, worlds: WorldSpecCache) -> WorldSpec:
    """The spec of world folder ``name`` inside ``root``; anything outside it (``..``, links) is refused.

    Parsed once per version of its ``world.json`` (``worlds`` keeps it), its tasks never read.

    Errors name the folder relative to the root, so a client never learns the server's paths.
    """
    if root is None:
        raise AgentWorldError("this server serves no world folders (start it with --worlds-root ROOT)")
    _check_world_name(name)
    base = root.resolve()
    target = (base / name).resolve()
    if not target.is_relative_to(base):
        raise AgentWorldError(f"world {name!r} is outside the server's worlds root")
    try:
        return worlds.spec(target)
    except AgentWorldError as exc:
        raise AgentWorldError(str(exc).replace(f"{base}/", "")) from None
    except OSError as exc:  # the name is valid but the file system refuses it (a loop of links, no access)
        reason = exc.strerror or type(exc).__name__
        raise AgentWorldError(f"world {name[:64]!r} cannot be read: {reason}") from None


NAME_MAX_BYTES = 255
"""Longest path component (as UTF-8) a world name may have: the limit of the usual file systems."""


def _check_world_name(name: str) -> None:
    """Refuse a name no file system can hold before it reaches one (a NUL byte, an over-long component).

    Why: those raise ``ValueError``/``OSError`` deep inside path handling, which answered 500 and
    reset the client's keep-alive connection; they are the client's mistake (422).
    """
    if "\x00" in name:
        raise AgentWorldError("world name contains a NUL byte")
    longest = max(len(part.encode("utf-8", "surrogatepass")) for part in name.split("/"))
    if longest > NAME_MAX_BYTES:
        raise AgentWorldError(f"world name has a component of {longest} bytes, over the file-system limit "
                              f"of {NAME_MAX_BYTES}")


def _add_error_handlers(app: FastAPI, secrets: tuple[str | None, ...]) -> None:
    """Map errors to HTTP statuses with their own message (credentials masked, inputs not echoed)."""

    async def not_found(_: Request, exc: Exception) -> Response:
        return _json(404, {"detail": str(exc)})

    async def limit(_: Request, exc: Exception) -> Response:
        return _json(429, {"detail": str(exc)})

    async def backend(_: Request, exc: Exception) -> Response:
        text = redact_text(str(exc), secrets)
        log.warning("model backend failed: %s", text)
        return _json(502, {"detail": f"world model failed: {text}"})

    async def invalid(_: Request, exc: Exception) -> Response:
        return _json(422, {"detail": redact_text(str(exc), secrets)})

    async def malformed(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return _json(422, {"detail": describe_validation(exc.errors())})

    app.add_exception_handler(SessionNotFound, not_found)
    app.add_exception_handler(SessionLimitReached, limit)
    app.add_exception_handler(BackendError, backend)
    app.add_exception_handler(AgentWorldError, invalid)
    app.add_exception_handler(RequestValidationError, malformed)


def describe_validation(errors: Any) -> str:
    """``body.seed: Input should be a finite number; …``: where and what, without echoing the input.

    FastAPI's own 422 answer repeats each offending value, which fails for values JSON cannot
    carry (``1e400`` parses as infinity: a 500) and would echo megabytes of a client's body.
    """
    parts = []
    for error in list(errors)[:20]:
        where = ".".join(str(p) for p in error.get("loc", ()))
        parts.append(f"{where}: {error.get('msg', 'invalid')}" if where else str(error.get("msg", "invalid")))
    return "; ".join(parts) or "invalid request"

"""``serve mcp --transport http``: the simulated MCP server over streamable HTTP, with episode addresses.

Routes (all behind one :class:`~agentworld.serve.guard.GuardMiddleware`: bearer token, body limit):

* ``/mcp`` — MCP. A handshake-era client (``Mcp-Session-Id``) gets one episode per MCP session,
  closed when the session ends (its sessions are served by :mod:`agentworld.serve.mcp_handshake`);
  stateless clients share one episode;
* ``POST /v1/episodes`` ``{"seed": 7}`` (body optional) → ``{"episode_id", "mcp_url", "observation"}``:
  a new episode, reachable by any MCP client at ``mcp_url`` (``/episodes/<episode-id>/mcp``; the
  older ``/mcp/<episode-id>`` still works), stateless or not, and by nobody else's requests;
  ``DELETE /v1/episodes/<id>`` closes it, and so does the end of an MCP session that acted in it;
* ``GET /v1/health`` → ``{"status": "ok", "episodes": <open simulators>}``, without a token.

Why episode addresses: stateless MCP clients (the SDK's default) carry no session id, so on
``/mcp`` they cannot be told apart; concurrent RL episodes need an address each. Why it ends in
``/mcp``: the MCP Inspector rewrites any URL whose path does not, so its calls on ``/mcp/<id>``
silently landed in a fresh simulator.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import orjson
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentworld.serve.guard import GuardMiddleware
from agentworld.serve.mcp_handshake import HandshakeSessions
from agentworld.serve.mcp_server import SimulatedToolServer
from agentworld.serve.net import allowed_host_names, is_loopback
from agentworld.serve.sessions import SessionLimitReached, SessionNotFound
from agentworld.sim.types import Seed


class CreateEpisodeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    seed: Seed | None = None
    """The episode's seed (fault decisions, sampling); default: the server's --seed."""


def _json(status: int, body: Any) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


class _PostOnly:
    """The SDK's MCP endpoint without the standalone GET stream (405, as the spec allows).

    The simulator never sends server-initiated messages, so the stream would only hold a
    connection and a task per session open; answers come in the POST responses (as JSON).
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["method"] == "GET":
            await Response(status_code=405, headers={"Allow": "POST, DELETE"})(scope, receive, send)
            return
        await self.app(scope, receive, send)


def http_app(tool_server: SimulatedToolServer, *, host: str = "127.0.0.1", token: str | None = None,
             max_body_bytes: int = 4_194_304, allowed_hosts: Sequence[str] = ()) -> Any:
    """The ASGI app: MCP at ``/mcp``, ``/episodes/{episode}/mcp`` and ``/mcp/{episode}``, the episode
    API, health.

    MCP sessions and episodes share the limits of ``tool_server.sessions`` (``--max-sessions``,
    ``--idle-timeout-s``). On a loopback ``host`` the SDK's DNS-rebinding protection is on; every
    route answers only the names of :func:`~agentworld.serve.net.allowed_host_names` (``host``,
    loopback, ``allowed_hosts``) and takes JSON bodies only (:class:`GuardMiddleware`).
    """
    sessions = tool_server.sessions
    security = None
    names = ["127.0.0.1", "localhost", "[::1]", *(f"[{h}]" if ":" in h else h for h in allowed_hosts)]
    if is_loopback(host):
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[f"{n}:*" for n in names],
            allowed_origins=[f"{scheme}://{n}:*" for n in names for scheme in ("http", "https")])
    manager = StreamableHTTPSessionManager(
        app=tool_server.server, security_settings=security, max_request_body_size=max_body_bytes,
        json_response=True,
        session_idle_timeout=sessions.idle_timeout_s, max_sessions=sessions.max_sessions)
    handshake = HandshakeSessions(tool_server.server, _PostOnly(StreamableHTTPASGIApp(manager)),
                                  security=security, idle_timeout_s=sessions.idle_timeout_s,
                                  max_sessions=sessions.max_sessions)

    async def create(request: Request) -> Response:
        raw = await request.body()
        try:
            body = CreateEpisodeRequest.model_validate_json(raw or b"{}")
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
                                 for e in exc.errors()[:20])
            return _json(422, {"detail": problems})
        try:
            episode_id, observation = await tool_server.create_episode(body.seed)
        except SessionLimitReached as exc:
            return _json(429, {"detail": str(exc)})
        url = f"{str(request.base_url).rstrip('/')}/episodes/{episode_id}/mcp"
        return _json(200, {"episode_id": episode_id, "mcp_url": url, "observation": observation})

    async def delete(request: Request) -> Response:
        episode_id = request.path_params["episode"]
        try:
            await tool_server.close_episode(episode_id)
        except SessionNotFound:
            return _json(404, {"detail": f"no open episode {episode_id[:64]!r}"})
        return _json(200, {"episode_id": episode_id, "closed": True})

    async def health(_: Request) -> Response:
        return _json(200, {"status": "ok", "episodes": len(sessions)})

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with manager.run(), handshake.running(), sessions.reaping():
            yield
        await tool_server.aclose()

    app = Starlette(routes=[
        Route("/mcp", handshake), Route("/episodes/{episode}/mcp", handshake),
        Route("/mcp/{episode}", handshake),
        Route("/v1/episodes", create, methods=["POST"]),
        Route("/v1/episodes/{episode}", delete, methods=["DELETE"]),
        Route("/v1/health", health, methods=["GET"]),
    ], lifespan=lifespan)
    return GuardMiddleware(app, token=token, max_body_bytes=max_body_bytes,
                           allowed_hosts=allowed_host_names(host, allowed_hosts))

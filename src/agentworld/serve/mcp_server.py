"""An MCP server with simulated tools: ``tools/list`` from a JSON file, ``tools/call`` by the world model.

An agent (or any MCP client) connects as to the real server: it sees exactly the tools of the
given ``tools/list`` JSON and each call is answered by a :class:`~agentworld.sim.session.Simulator`
in the ``mcp`` domain. Arguments are checked here, before the simulator (and so the model) is
involved: the 2.x low-level SDK server does not validate, and an invalid call must cost nothing
and say what was wrong, as a real server would. Schemas are compiled safely (local references
only, patterns on RE2) and argument sizes are capped (:mod:`agentworld.sim.toolschema`).

Episodes (one simulator each), by how a request arrives:

* stdio: the process is one episode;
* HTTP ``/episodes/<episode-id>/mcp`` or ``/mcp/<episode-id>`` (an episode created with
  ``POST /v1/episodes``): that episode, for any client, stateless or not; it ends on
  ``DELETE /v1/episodes/<id>``, idle expiry, or when an MCP session that acted in it ends;
* HTTP ``/mcp`` with an MCP session (``Mcp-Session-Id``, handshake-era clients): one episode per
  MCP session, closed when the session ends (client DELETE, idle timeout, transport closed);
* HTTP ``/mcp`` without a session (the stateless 2026-07-28 protocol): one shared episode.

The HTTP app itself is in :mod:`agentworld.serve.mcp_http`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server

from agentworld.domains import TOOLS_DOMAIN
from agentworld.errors import AgentWorldError
from agentworld.redact import redact_text
from agentworld.serve.sessions import SessionManager, SimulatorFactory
from agentworld.sim import toolschema
from agentworld.sim.types import ControlSpec, WorldSpec

log = logging.getLogger(__name__)

SESSION_HEADER = "mcp-session-id"
SHARED_SESSION = "shared"
"""Episode key of requests without an episode address or MCP session (stdio, stateless HTTP)."""
EPISODE_PREFIX = "episode:"
_OWNED = "agentworld_episode"
"""``Connection.state`` key: the episode an MCP session owns (closed with the session)."""
CLOSE_HINT = ("end an MCP session (the client's DELETE /mcp) or close an episode (DELETE /v1/episodes/{id})")


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


class EpisodeNotFound(AgentWorldError):
    """A request addressed an episode that is not open."""


class SimulatedToolServer:
    """The tool catalogue, argument checks and per-episode simulators behind an MCP ``Server``.

    Args:
        tools: ``tools/list`` entries (checked by :func:`~agentworld.sim.toolfile.load_tools`).
        factory: builds a simulator per episode (sharing one model backend).
        controls: faults and world facts enforced by the framework.
        initial_state: description of the starting state given to the world model.
        seed: episode seed (faults, sampling) unless an episode is created with its own.
        idle_timeout_s / max_sessions: limits of the episodes held over HTTP.
        max_argument_bytes: larger arguments are refused before validation and the model.
    """

    def __init__(self, tools: list[dict[str, Any]], factory: SimulatorFactory, *,
                 controls: ControlSpec | None = None, initial_state: str = "", seed: int = 0,
                 name: str = "agentworld-sim", idle_timeout_s: float = 1800.0,
                 max_sessions: int = 1024, max_argument_bytes: int = 65_536) -> None:
        self.tools = tools
        self._by_name = {t["name"]: t for t in tools}
        self._validators = {t["name"]: toolschema.compile_schema(t["inputSchema"]) for t in tools}
        self._heavy = {t["name"] for t in tools if toolschema.is_heavy(t["inputSchema"])}
        self._listed = [types.Tool.model_validate(t) for t in tools]
        self.spec = WorldSpec(domain=TOOLS_DOMAIN, name=name, tools=tools, initial_state=initial_state,
                              controls=controls or ControlSpec())
        self.seed = seed
        self.max_argument_bytes = max_argument_bytes
        self.sessions = SessionManager(factory, idle_timeout_s=idle_timeout_s, max_sessions=max_sessions,
                                       close_hint=CLOSE_HINT)
        self.server: Server[Any] = Server(name, version="1", on_list_tools=self._list_tools,
                                          on_call_tool=self._call_tool)

    async def _list_tools(self, ctx: Any,
                          params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(self._listed))

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name = params.name
        if name not in self._by_name:
            return _error(f"Error: unknown tool {name!r}; available: {', '.join(self._by_name)}")
        arguments = params.arguments or {}
        size = toolschema.json_size(arguments)
        if size > self.max_argument_bytes:
            return _error(f"Error: arguments of tool {name!r} are {size} bytes of JSON, over this server's "
                          f"limit of {self.max_argument_bytes} (--max-argument-bytes)")
        problem = await self._check(name, arguments, size)
        if problem is not None:
            return _error(f"Error: invalid arguments for tool {name!r}: {problem}")
        try:
            key = await self._episode(ctx)
            async with self.sessions.use(key) as session:
                result = await session.simulator.astep({"tool_name": name, "arguments": arguments})
        except AgentWorldError as exc:
            text = redact_text(str(exc))
            log.warning("tool %s failed: %s", name, text)
            return _error(f"Error: {text}")
        except Exception as exc:  # a simulator bug must fail this call, not the client's connection
            log.exception("tool %s: simulator failed", name)
            return _error(f"Error: internal simulator failure ({type(exc).__name__}: "
                          f"{redact_text(str(exc))[:300]})")
        return types.CallToolResult(content=[types.TextContent(text=result.observation)],
                                    is_error=result.is_error)

    async def _check(self, name: str, arguments: dict[str, Any], size: int) -> str | None:
        """``check_arguments`` (sim.toolfile) on the compiled schema, off the event loop if it may be slow."""
        validator = self._validators[name]

        def check() -> str | None:
            problem = toolschema.argument_problem(arguments)
            if problem is not None:
                return problem
            try:
                errors = toolschema.iter_problems(validator, arguments)
            except toolschema.SchemaTooComplex:
                return "the arguments are too complex to check against the inputSchema"
            return "; ".join(f"{toolschema.location(e)}: {toolschema.message(e)}" for e in errors) or None

        if name in self._heavy or size > 4096:
            return await asyncio.to_thread(check)
        return check()

    async def create_episode(self, seed: int | None = None) -> tuple[str, str]:
        """Open an episode addressed as ``/episodes/<id>/mcp`` (or ``/mcp/<id>``); return its id and
        initial observation."""
        import secrets

        episode_id = secrets.token_hex(16)
        _, observation = await self.sessions.create(self.spec, self.seed if seed is None else seed,
                                                    session_id=EPISODE_PREFIX + episode_id)
        return episode_id, observation

    async def close_episode(self, episode_id: str) -> None:
        """Close an episode (raises :class:`~agentworld.serve.sessions.SessionNotFound` when not open)."""
        await self.sessions.close(EPISODE_PREFIX + episode_id)

    async def _episode(self, ctx: Any) -> str:
        """The key of the episode this request acts in (see the module docstring), opened if needed."""
        request = getattr(ctx, "request", None)
        episode = getattr(request, "path_params", {}).get("episode") if request is not None else None
        if episode is not None:
            key = EPISODE_PREFIX + str(episode)
            if key not in self.sessions:
                raise EpisodeNotFound(f"no open episode {str(episode)[:64]!r} at this address: create one "
                                      "with POST /v1/episodes (episodes end on DELETE /v1/episodes/{id} or "
                                      f"after {self.sessions.idle_timeout_s:g} s idle, --idle-timeout-s)")
            connection = _connection(ctx)
            if connection is not None and connection.session_id and _OWNED not in connection.state:
                # An MCP session on an episode address: when it ends (the client's DELETE), so does
                # the episode, instead of holding a simulator for --idle-timeout-s (MCP Inspector).
                connection.state[_OWNED] = key
                connection.exit_stack.push_async_callback(self.sessions.release, key)
            return key
        connection = _connection(ctx)
        # The transport's own session id: a header alone could name another client's session.
        session_id = connection.session_id if connection is not None else _header(request, SESSION_HEADER)
        if not session_id:
            await self.sessions.ensure(SHARED_SESSION, self.spec, self.seed)
            return SHARED_SESSION
        key = f"mcp:{session_id}"
        if connection is None:  # no per-session cleanup hook: idle expiry closes it
            await self.sessions.ensure(key, self.spec, self.seed)
            return key
        if _OWNED not in connection.state:
            connection.state[_OWNED] = key
            connection.exit_stack.push_async_callback(self.sessions.release, key)
            try:
                await self.sessions.create(self.spec, self.seed, session_id=key)
            except BaseException:
                connection.state.pop(_OWNED, None)
                raise
        elif key not in self.sessions:
            raise EpisodeNotFound(f"this MCP session's episode expired after "
                                  f"{self.sessions.idle_timeout_s:g} s without a tool call "
                                  "(--idle-timeout-s); start a new MCP session")
        return key

    async def aclose(self) -> None:
        """Close every episode's simulator."""
        await self.sessions.aclose_all()


def _header(request: Any, name: str) -> str | None:
    headers = getattr(request, "headers", None)
    value = headers.get(name) if headers is not None else None
    return value if isinstance(value, str) else None


def _connection(ctx: Any) -> Any | None:
    """The MCP connection a request came on, where per-session cleanup is registered.

    Its ``exit_stack`` is unwound when the session ends, however it ends (client DELETE, idle
    timeout, crash, shutdown), which is the one place to close the session's simulator. The
    low-level SDK (2.3) hands handlers a context whose ``session`` holds the connection without a
    public accessor; without it (another SDK version), episodes of MCP sessions fall back to
    idle expiry, and ``tests/serve/test_serve_mcp.py`` fails loudly.
    """
    connection = getattr(getattr(ctx, "session", None), "_connection", None)
    if connection is None or not hasattr(connection, "exit_stack") or not isinstance(
            getattr(connection, "state", None), dict):
        return None
    return connection


async def serve_stdio(tool_server: SimulatedToolServer) -> None:
    """Serve over stdin/stdout until the client closes them (one episode)."""
    from mcp.server.stdio import stdio_server

    server = tool_server.server
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await tool_server.aclose()

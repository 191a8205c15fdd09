"""An MCP server with simulated tools: ``tools/list`` from a JSON file, ``tools/call`` by the world model.

An agent (or any MCP client) connects as to the real server: it sees exactly the tools of the
given ``tools/list`` JSON and each call is answered by a :class:`~agentworld.sim.session.Simulator`
in the ``mcp`` domain. Arguments are validated against the tool's ``inputSchema`` here, before
the simulator (and so the model) is involved: the 2.x low-level SDK server does not validate, and
an invalid call must cost nothing and say what was wrong, as a real server would.

Episodes: over stdio one process is one episode (one simulator). Over streamable HTTP each MCP
session (``Mcp-Session-Id`` of the handshake-era protocol) gets its own simulator, held in a
:class:`~agentworld.serve.sessions.SessionManager` (idle expiry, size limit); requests that carry
no session id (the stateless 2026-07-28 protocol) share one simulator behind its lock.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import mcp_types as types
from jsonschema import SchemaError, ValidationError, validators
from mcp.server.lowlevel import Server

from agentworld.errors import AgentWorldError, DataError
from agentworld.serve.sessions import SessionManager, SimulatorFactory
from agentworld.sim.types import ControlSpec, WorldSpec

log = logging.getLogger(__name__)

SESSION_HEADER = "mcp-session-id"
SHARED_SESSION = "shared"
"""Session key of requests without an MCP session id (stdio, stateless HTTP)."""


def load_tools(path: str | Path) -> list[dict[str, Any]]:
    """Read MCP tool definitions (``{"tools": [...]}`` or a bare list) and check each entry.

    Raises:
        DataError: unreadable JSON, or an entry without a string ``name`` or an object
            ``inputSchema`` that is a valid JSON schema; the message names file, index and field.
    """
    where = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise DataError(f"cannot read tools file: {exc}", path=where) from exc
    except json.JSONDecodeError as exc:
        raise DataError(f"not valid JSON: {exc}", path=where, line=exc.lineno) from exc
    tools = data.get("tools") if isinstance(data, dict) else data
    if not isinstance(tools, list):
        raise DataError('expected {"tools": [...]} or a list of tools', path=where)
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        _check_tool(tool, f"{where} [tool {i}]", seen)
    return [dict(t) for t in tools]


def _check_tool(tool: Any, where: str, seen: set[str]) -> None:
    if not isinstance(tool, dict):
        raise DataError(f"a tool must be an object, got {type(tool).__name__}", path=where)
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise DataError("missing or empty tool name", path=where, field="name")
    if name in seen:
        raise DataError(f"duplicate tool name {name!r}", path=where, field="name")
    seen.add(name)
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict):
        raise DataError(f"tool {name!r}: missing inputSchema (a JSON schema object)", path=where,
                        field="inputSchema")
    if schema.get("type") != "object":
        raise DataError(f'tool {name!r}: inputSchema must have "type": "object"', path=where,
                        field="inputSchema")
    try:
        validators.validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise DataError(f"tool {name!r}: invalid inputSchema: {exc.message}", path=where,
                        field="inputSchema") from exc


def check_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` break ``schema`` (every problem, with its JSON path), or None when valid."""
    validator = validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    return "; ".join(_describe(e) for e in errors)


def _describe(error: ValidationError) -> str:
    path = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"arguments{path}: {error.message}"


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


class SimulatedToolServer:
    """The tool catalogue, argument checks and per-session simulators behind an MCP ``Server``.

    Args:
        tools: ``tools/list`` entries (checked by :func:`load_tools`).
        factory: builds a simulator per episode (sharing one model backend).
        controls: faults and world facts enforced by the framework.
        initial_state: description of the starting state given to the world model.
        seed: episode seed (faults, sampling).
        idle_timeout_s / max_sessions: limits of the HTTP per-session simulators.
    """

    def __init__(self, tools: list[dict[str, Any]], factory: SimulatorFactory, *,
                 controls: ControlSpec | None = None, initial_state: str = "", seed: int = 0,
                 name: str = "agentworld-sim", idle_timeout_s: float = 1800.0,
                 max_sessions: int = 1024) -> None:
        self.tools = tools
        self._by_name = {t["name"]: t for t in tools}
        self._listed = [types.Tool.model_validate(t) for t in tools]
        self.spec = WorldSpec(domain="mcp", name=name, tools=tools, initial_state=initial_state,
                              controls=controls or ControlSpec())
        self.seed = seed
        self.sessions = SessionManager(factory, idle_timeout_s=idle_timeout_s, max_sessions=max_sessions)
        self.server: Server[Any] = Server(name, version="1", on_list_tools=self._list_tools,
                                          on_call_tool=self._call_tool)

    async def _list_tools(self, ctx: Any,
                          params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(self._listed))

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = self._by_name.get(params.name)
        if tool is None:
            return _error(f"Error: unknown tool {params.name!r}; available: {', '.join(self._by_name)}")
        arguments = params.arguments or {}
        problem = check_arguments(tool["inputSchema"], arguments)
        if problem is not None:
            return _error(f"Error: invalid arguments for tool {params.name!r}: {problem}")
        key = _session_key(ctx)
        try:
            await self.sessions.ensure(key, self.spec, self.seed)
            async with self.sessions.use(key) as session:
                result = await session.simulator.astep({"tool_name": params.name, "arguments": arguments})
        except AgentWorldError as exc:
            log.warning("tool %s failed: %s", params.name, exc)
            return _error(f"Error: {exc}")
        except Exception as exc:  # a simulator bug must fail this call, not the client's connection
            log.exception("tool %s: simulator failed", params.name)
            return _error(f"Error: internal simulator failure ({type(exc).__name__}: {exc})")
        return types.CallToolResult(content=[types.TextContent(text=result.observation)],
                                    is_error=result.is_error)

    async def aclose(self) -> None:
        """Close every episode's simulator."""
        await self.sessions.aclose_all()


def _session_key(ctx: Any) -> str:
    """The MCP session id of this request's HTTP transport, or the shared key (stdio, stateless)."""
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    session_id = headers.get(SESSION_HEADER) if headers is not None else None
    return f"mcp:{session_id}" if session_id else SHARED_SESSION


async def serve_stdio(tool_server: SimulatedToolServer) -> None:
    """Serve over stdin/stdout until the client closes them (one episode)."""
    from mcp.server.stdio import stdio_server

    server = tool_server.server
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await tool_server.aclose()


def http_app(tool_server: SimulatedToolServer, *, host: str = "127.0.0.1") -> Any:
    """The streamable-HTTP Starlette app serving ``/mcp`` (DNS-rebinding protection for localhost)."""
    return tool_server.server.streamable_http_app(streamable_http_path="/mcp", host=host,
                                                  session_idle_timeout=tool_server.sessions.idle_timeout_s)

"""agentworld.serve: the mock model server, the HTTP session API and the simulated MCP server.

Exports are resolved lazily: ``agentworld.cli`` imports this package for every command, and the
apps pull in FastAPI, the MCP SDK and the simulator, which most commands never need.
"""

from __future__ import annotations

from importlib import import_module

_EXPORTS = {
    "Session": "agentworld.serve.sessions",
    "SessionLimitReached": "agentworld.serve.sessions",
    "SessionManager": "agentworld.serve.sessions",
    "SessionNotFound": "agentworld.serve.sessions",
    "SimulatorLike": "agentworld.serve.sessions",
    "simulator_factory": "agentworld.serve.sessions",
    "HttpServeConfig": "agentworld.serve.config",
    "McpServeConfig": "agentworld.serve.config",
    "MockConfig": "agentworld.serve.config",
    "create_app": "agentworld.serve.http_api",
    "http_app": "agentworld.serve.mcp_http",
    "SimulatedToolServer": "agentworld.serve.mcp_server",
    "load_tools": "agentworld.serve.mcp_server",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentworld.serve' has no attribute {name!r}")
    return getattr(import_module(module), name)

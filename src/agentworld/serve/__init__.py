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
    "SessionManagerConfig": "agentworld.serve.sessions",
    "SessionNotFound": "agentworld.serve.sessions",
    "SimulatorLike": "agentworld.serve.sessions",
    "make_backend": "agentworld.serve.sessions",
    "simulator_factory": "agentworld.serve.sessions",
    "create_app": "agentworld.serve.http_api",
    "SimulatedToolServer": "agentworld.serve.mcp_server",
    "load_tools": "agentworld.serve.mcp_server",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentworld.serve' has no attribute {name!r}")
    return getattr(import_module(module), name)

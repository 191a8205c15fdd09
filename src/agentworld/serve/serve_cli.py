"""``agentworld serve mcp|http``: serve simulated worlds to agents.

``mcp`` makes a world model look like a real MCP server (stdio or streamable HTTP); ``http``
serves many simulator sessions over the JSON session API. Both bind 127.0.0.1 unless told
otherwise, since a simulator spends model compute for whoever reaches it. Secrets (API key,
token) come from options or environment variables and are never echoed.

Run standalone with ``python -m agentworld.serve.serve_cli mcp …``.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import SecretStr

from agentworld.cli_support import new_app
from agentworld.errors import AgentWorldError
from agentworld.serve.net import bind_tcp

app = new_app("Serve simulated environments (MCP, the HTTP session API) and the mock OpenAI-compatible "
              "server.")

ModelUrl = Annotated[str, typer.Option("--model-base-url", help="World model's OpenAI-compatible endpoint.",
                                       show_default=False)]
ModelName = Annotated[str, typer.Option("--model", help="Model name sent with each request.",
                                        show_default=False)]
Host = Annotated[str, typer.Option(help="Address to bind (keep 127.0.0.1 unless you need remote access).")]
ApiKey = Annotated[str | None, typer.Option("--api-key", envvar="OPENAI_API_KEY", show_default=False,
                                            show_envvar=True, help="Key for the model endpoint.")]


def _bind(host: str, port: int) -> socket.socket:
    return bind_tcp(host, port, backlog=2048)


def run_uvicorn(asgi_app: Any, host: str, port: int, path: str) -> None:
    """Serve ``asgi_app`` until interrupted; announce ``http://HOST:PORT{path}`` on stderr.

    The socket is bound first so ``--port 0`` works: the announced URL carries the chosen port.
    """
    import uvicorn

    sock = _bind(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    print(f"agentworld: listening on http://{shown}:{bound_port}{path}", file=sys.stderr, flush=True)
    config = uvicorn.Config(asgi_app, log_level="warning", access_log=False, lifespan="on",
                            limit_concurrency=100_000, backlog=2048, timeout_graceful_shutdown=3)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


@app.command("mcp")
def mcp(
    tools: Annotated[Path, typer.Option("--tools", help="tools/list JSON ({\"tools\": [...]} or a list).",
                                        show_default=False)],
    model_base_url: ModelUrl,
    model: ModelName,
    control: Annotated[Path | None, typer.Option("--control", help="Control spec (faults, facts), YAML or "
                                                 "JSON.", show_default=False)] = None,
    transport: Annotated[str, typer.Option(help="stdio or http (streamable HTTP at /mcp).")] = "stdio",
    host: Host = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port; 0 picks a free one (printed on stderr).")] = 8766,
    seed: Annotated[int, typer.Option(help="Episode seed (fault decisions, sampling).")] = 0,
    initial_state: Annotated[str, typer.Option(help="Description of the world's starting state.")] = "",
    api_key: ApiKey = None,
) -> None:
    """Serve the tools of TOOLS as an MCP server whose results come from the world model."""
    from agentworld.serve.mcp_server import SimulatedToolServer, http_app, load_tools, serve_stdio
    from agentworld.serve.sessions import make_backend, simulator_factory
    from agentworld.sim.types import ControlSpec

    if transport not in ("stdio", "http"):
        raise typer.BadParameter("must be 'stdio' or 'http'", param_hint="--transport")
    try:
        tool_list = load_tools(tools)
        controls = ControlSpec.load(control) if control is not None else None
    except AgentWorldError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    backend = make_backend(model_base_url, model, api_key=api_key)
    tool_server = SimulatedToolServer(tool_list, simulator_factory(backend), controls=controls,
                                      initial_state=initial_state, seed=seed)
    if transport == "stdio":
        asyncio.run(serve_stdio(tool_server))
    else:
        run_uvicorn(http_app(tool_server, host=host), host, port, "/mcp")


@app.command("http")
def http(
    model_base_url: ModelUrl,
    model: ModelName,
    host: Host = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port; 0 picks a free one (printed on stderr).")] = 8765,
    token: Annotated[str | None, typer.Option(envvar="AGENTWORLD_TOKEN", show_envvar=True, show_default=False,
                                              help="Bearer token clients must send.")] = None,
    idle_timeout_s: Annotated[float, typer.Option(help="Close sessions idle this long.")] = 600.0,
    max_sessions: Annotated[int, typer.Option(help="Most open sessions (more answer 429).")] = 256,
    max_body_bytes: Annotated[int, typer.Option(help="Largest request body (more answer 413).")] = 1_048_576,
    concurrency: Annotated[int, typer.Option(help="Most model requests in flight.")] = 64,
    api_key: ApiKey = None,
) -> None:
    """Serve the HTTP session API (/v1/sessions …) on one shared world-model backend."""
    from agentworld.serve.http_api import create_app
    from agentworld.serve.sessions import SessionManagerConfig

    config = SessionManagerConfig(
        model_base_url=model_base_url, model=model, api_key=SecretStr(api_key) if api_key else None,
        token=SecretStr(token) if token else None, idle_timeout_s=idle_timeout_s, max_sessions=max_sessions,
        max_body_bytes=max_body_bytes, concurrency=concurrency)
    run_uvicorn(create_app(config), host, port, "/v1")


from agentworld.serve.cli import mock_server  # noqa: E402  (the mock server is one more serve command)

app.command("mock")(mock_server)

if __name__ == "__main__":
    app()

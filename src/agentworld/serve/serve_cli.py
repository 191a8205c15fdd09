"""``agentworld serve mcp|http|mock``: serve simulated worlds to agents, and a mock model server.

``mcp`` makes a world model look like a real MCP server (stdio or streamable HTTP); ``http``
serves many simulator sessions over the JSON session API; ``mock`` is the OpenAI-compatible mock
model server used by tests and benchmarks. Options come from the configs of
:mod:`agentworld.serve.config`. The simulator servers bind 127.0.0.1 unless told otherwise and
refuse another address without a token (a simulator spends model compute for whoever reaches it).
Secrets (model API key, token) come from options or environment variables and are never echoed.

Run as ``agentworld serve mcp …`` (or ``python -m agentworld serve mcp …``).
"""

from __future__ import annotations

from agentworld.cli_support import config_command, new_app
from agentworld.serve.config import HttpServeConfig, McpServeConfig, MockConfig

app = new_app("Serve simulated environments (MCP, the HTTP session API) and the mock OpenAI-compatible "
              "server.")


def _mcp(config: McpServeConfig) -> None:
    import asyncio

    from agentworld.domains import TOOLS_DOMAIN
    from agentworld.endpoints import secret
    from agentworld.serve.mcp_server import SimulatedToolServer, serve_stdio
    from agentworld.serve.net import check_exposure, run_uvicorn
    from agentworld.serve.sessions import simulator_factory
    from agentworld.sim.toolfile import load_tools
    from agentworld.sim.types import ControlSpec

    name, initial_state = "agentworld-sim", config.initial_state
    if config.world is not None:
        from agentworld.sim.toolfile import check_tools
        from agentworld.synth.world import load_world

        world = load_world(config.world)
        spec = world.to_spec()
        tools = check_tools(spec.tools, str(config.world / "world.json"))
        name = world.name
        initial_state = "\n\n".join(x for x in (spec.initial_state, config.initial_state) if x)
    else:
        assert config.tools is not None
        tools = load_tools(config.tools)
    controls = ControlSpec.load(config.control) if config.control is not None else None
    if config.transport == "http":
        check_exposure(config.host, secret(config.token), config.allow_no_token)
    backend = config.model_endpoint().backend(domains=[TOOLS_DOMAIN], concurrency=config.concurrency,
                                              max_tokens=config.max_tokens)
    tool_server = SimulatedToolServer(tools, simulator_factory(backend), controls=controls,
                                      initial_state=initial_state, seed=config.seed, name=name,
                                      idle_timeout_s=config.idle_timeout_s, max_sessions=config.max_sessions,
                                      max_argument_bytes=config.max_argument_bytes)
    if config.transport == "stdio":
        asyncio.run(serve_stdio(tool_server))
        return
    from agentworld.serve.mcp_http import http_app

    run_uvicorn(http_app(tool_server, host=config.host, token=secret(config.token),
                         max_body_bytes=config.max_body_bytes, allowed_hosts=config.allowed_hosts),
                config.host, config.port, "/mcp")


def _http(config: HttpServeConfig) -> None:
    from agentworld.endpoints import secret
    from agentworld.serve.http_api import create_app
    from agentworld.serve.net import check_exposure, run_uvicorn

    check_exposure(config.host, secret(config.token), config.allow_no_token)
    run_uvicorn(create_app(config), config.host, config.port, "/v1")


def _mock(config: MockConfig) -> None:
    import typer

    from agentworld.endpoints import secret
    from agentworld.serve.config import MOCK_TOKEN_ENV
    from agentworld.serve.mock_server import serve_forever
    from agentworld.serve.net import check_exposure

    check_exposure(config.host, secret(config.token), config.allow_no_token, envvar=MOCK_TOKEN_ENV)
    serve_forever(config, announce=lambda url: typer.echo(f"mock server listening on {url}"))


config_command(app, McpServeConfig, _mcp, name="mcp", help="Serve the tools of --tools (or of a world "
               "folder, --world) as an MCP server whose results come from the world model (stdio, or "
               "streamable HTTP with an address per episode).")
config_command(app, HttpServeConfig, _http, name="http", help="Serve the HTTP session API (/v1/sessions ...) "
               "on one shared world-model backend.")
config_command(app, MockConfig, _mock, name="mock", help="Serve AgentWorldBench ground truth (and a judge) "
               "over the OpenAI chat-completions API, with injected latency and failures.")

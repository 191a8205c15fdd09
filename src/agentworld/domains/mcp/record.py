"""``agentworld record mcp``: record MCP sessions through the relaying proxy (imported when it runs)."""

from __future__ import annotations

from pathlib import Path

import typer
from pydantic import BaseModel, ConfigDict, Field

from agentworld.domains.base import RecorderCommand
from agentworld.errors import AgentWorldError

DEFAULT_GRACE_S = 2.0
"""Same value as :data:`agentworld.envs.mcp_proxy_stdio.DEFAULT_GRACE_S` (not imported: it is heavy)."""


class RecordMcpOptions(BaseModel):
    """Record MCP sessions while relaying them, byte for byte, between a client and a real server.

    stdio: make 'agentworld record mcp --out S.jsonl -- SERVER COMMAND...' the client's server command.
    HTTP: run 'agentworld record mcp --out S.jsonl --url http://127.0.0.1:8000/mcp', then point the client
    at the URL printed on stderr. Each answered tool call is appended to OUT as it happens; the rows of
    one session make one trajectory (ingest format 'recording').
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    out: Path = Field(description="JSONL file to append to: an AgentWorldBench row per answered tool call, "
                      "as it is answered.")
    name: str | None = Field(None, description="Trajectory id prefix (default: the server's name).")
    url: str | None = Field(None, description="Streamable-HTTP MCP server to proxy, e.g. "
                            "http://127.0.0.1:8000/mcp (instead of a server command).")
    listen_port: int = Field(0, ge=0, le=65535, description="HTTP mode: port on 127.0.0.1 to serve on; 0 "
                             "picks a free one (the URL is printed on stderr).")
    grace_s: float = Field(DEFAULT_GRACE_S, ge=0, description="stdio mode: seconds the server may take to "
                           "exit once its input closes, and again after SIGTERM, before it is killed.")


def record_mcp(options: RecordMcpOptions, server: list[str] | None = None) -> None:
    if (options.url is None) == (not server):
        raise AgentWorldError("give either a server command after -- (stdio) or --url (HTTP), not both")
    if options.url is not None:
        from agentworld.envs.mcp_proxy_http import run_http_proxy

        raise typer.Exit(run_http_proxy(options.url, options.out, name=options.name,
                                        listen_port=options.listen_port))
    from agentworld.envs.mcp_proxy_stdio import run_stdio_proxy

    raise typer.Exit(run_stdio_proxy(server or [], options.out, name=options.name, grace_s=options.grace_s))


SERVER = typer.Argument(None, help="stdio mode: the real server command, after --.")

COMMAND = RecorderCommand(options=RecordMcpOptions, run=record_mcp,
                          arguments={"server": (list[str] | None, SERVER)})

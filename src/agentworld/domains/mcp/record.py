"""``agentworld record mcp``: record MCP sessions through the relaying proxy, or scripted scenarios
through it against real servers (imported when it runs; the machinery is imported inside)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    Scenarios: 'agentworld record mcp --scenarios FILE --out OUT [-- SERVER COMMAND...]' runs a real MCP
    client through this proxy for each scenario, against its server (git, time, filesystem, memory) in a
    fresh folder shown as /workspace, and writes AgentWorldBench rows.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    out: Path = Field(description="JSONL file to append to: an AgentWorldBench row per answered tool call, "
                      "as it is answered (with --scenarios: the rows of each recorded scenario).",
                      json_schema_extra={"output": "file"})
    scenarios: Path | None = Field(None, description="Scenario file (JSON lines: name, server, files, "
                                   "changes, calls) to record with a scripted MCP client; a server command "
                                   "after -- replaces each scenario's server ({root} is its folder).")
    resume: bool = Field(False, description="With --scenarios: keep OUT and record only the scenarios not "
                         "complete in it.")
    overwrite: bool = Field(False, description="With --scenarios: replace an existing OUT.")
    name: str | None = Field(None, description="Trajectory id prefix (default: the server's name).")
    url: str | None = Field(None, description="Streamable-HTTP MCP server to proxy, e.g. "
                            "http://127.0.0.1:8000/mcp (instead of a server command).")
    listen_port: int = Field(0, ge=0, le=65535, description="HTTP mode: port on 127.0.0.1 to serve on; 0 "
                             "picks a free one (the URL is printed on stderr).")
    grace_s: float = Field(DEFAULT_GRACE_S, ge=0, description="stdio mode: seconds the server may take to "
                           "exit once its input closes, and again after SIGTERM, before it is killed.")

    def appends_output(self, field: str) -> bool:
        """The proxy appends each session to OUT, so the output guard keeps an earlier recording of
        ours without --resume; with --scenarios, OUT is replaced unless resumed."""
        return self.scenarios is None


def record_mcp(options: RecordMcpOptions, server: list[str] | None = None) -> None:
    """Scenarios when ``--scenarios`` is given, else the recording proxy."""
    if options.scenarios is None:
        _proxy(options, server)
    else:
        _scenarios(options, server)


def _proxy(options: RecordMcpOptions, server: list[str] | None) -> None:
    from agentworld.domains.mcp.rows import ROWS

    if (options.url is None) == (not server):
        raise AgentWorldError("give either a server command after -- (stdio) or --url (HTTP), not both")
    if options.url is not None:
        from agentworld.envs.mcp_proxy_http import run_http_proxy

        raise typer.Exit(run_http_proxy(options.url, options.out, layout=ROWS, name=options.name,
                                        listen_port=options.listen_port))
    from agentworld.envs.mcp_proxy_stdio import run_stdio_proxy

    raise typer.Exit(run_stdio_proxy(server or [], options.out, layout=ROWS, name=options.name,
                                     grace_s=options.grace_s))


def _scenarios(options: RecordMcpOptions, server: list[str] | None) -> None:
    from rich.console import Console

    from agentworld.domains.mcp.recording import record_to_jsonl
    from agentworld.domains.mcp.scenarios import load_scenarios
    from agentworld.domains.mcp.servers import preset

    assert options.scenarios is not None
    if options.url is not None:
        raise AgentWorldError("--scenarios starts its own servers; it does not take --url")
    out = options.out
    if out.exists() and out.stat().st_size and not (options.resume or options.overwrite):
        raise AgentWorldError(f"{out} exists; pass --resume to continue it or --overwrite")
    scenarios = load_scenarios(options.scenarios)
    console = Console(stderr=True)
    missing = {s.name: why for s in scenarios if not server and (why := preset(s.server).missing())}
    if missing and len(missing) == len(scenarios):
        reasons = "; ".join(dict.fromkeys(missing.values()))
        raise AgentWorldError(f"no server of these scenarios is installed: {reasons}")
    for name, why in missing.items():
        console.print(f"skipped {name}: {why}", markup=False, highlight=False)
    scenarios = [s for s in scenarios if s.name not in missing]
    failed: list[str] = []

    def done(scenario: Any, error: str | None) -> None:
        if error is not None:
            failed.append(scenario.name)
            console.print(f"failed {error}", markup=False, highlight=False)

    rows = record_to_jsonl(scenarios, out, command=server or None, resume=options.resume, on_done=done)
    console.print(f"recorded {len(scenarios) - len(failed)} scenario(s), {rows} row(s) → {out}")
    if failed:
        console.print(f"{len(failed)} scenario(s) failed: {', '.join(failed)}", markup=False)
        raise typer.Exit(1)


SERVER = typer.Argument(None, help="stdio mode (or with --scenarios, instead of each scenario's server): "
                        "the real server command, after --.")

COMMAND = RecorderCommand(options=RecordMcpOptions, run=record_mcp,
                          arguments={"server": (list[str] | None, SERVER)})

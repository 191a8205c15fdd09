"""``agentworld record terminal|mcp|search``: record real environments into AgentWorldBench rows.

Both commands are generated from their config classes; the sandbox, tmux and the MCP proxies are
imported when a command runs. Example (re-creates the shipped corpus)::

    agentworld record terminal --out src/agentworld/corpus/terminal.jsonl --overwrite
"""

from __future__ import annotations

from pathlib import Path

import typer
from pydantic import BaseModel, ConfigDict, Field

from agentworld.cli_support import cli_flags, config_command, new_app
from agentworld.errors import AgentWorldError

app = new_app("Record real environments: terminal sessions in the sandbox, MCP traffic through a proxy, "
              "search over a local index.")

DEFAULT_GRACE_S = 2.0
"""Same value as :data:`agentworld.envs.mcp_proxy_stdio.DEFAULT_GRACE_S` (not imported: it is heavy)."""


class RecordTerminalOptions(BaseModel):
    """Run each scenario in a fresh sandboxed bash (bubblewrap + tmux) and write its rows to OUT."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    out: Path = Field(description="JSONL file of AgentWorldBench rows to write.")
    scenarios: Path | None = Field(None, description="Scenario JSON file or folder of *.json (default: the "
                                   "built-in scenarios).")
    seed: int = Field(0, description="Seed of the container hostnames (same seed, same screens).")
    resume: bool = Field(False, description="Keep OUT and record only the scenarios not complete in it.",
                         json_schema_extra=cli_flags("--resume", "--append"))
    overwrite: bool = Field(False, description="Replace an existing OUT.")
    fast: bool = Field(True, description="End a wait early once the prompt is back and the screen is "
                       "stable.")
    wall_clock_s: float = Field(900.0, gt=0, description="Wall-clock limit of one terminal session, "
                                "seconds.")


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
                      "as it is answered (with --scenarios: the rows of each recorded scenario).")
    scenarios: Path | None = Field(None, description="Scenario file (JSON lines: name, server, files, calls) "
                                   "to record with a scripted MCP client; a server command after -- "
                                   "replaces each scenario's server ({root} is its folder).")
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


def _terminal(options: RecordTerminalOptions) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from agentworld.envs.record import Scenario, builtin_scenarios_dir, load_scenarios, record_to_jsonl
    from agentworld.envs.sandbox import SandboxConfig
    from agentworld.schema import Trajectory

    console = Console(stderr=True)
    out = options.out
    items = load_scenarios(options.scenarios if options.scenarios is not None else builtin_scenarios_dir())
    if out.exists() and out.stat().st_size and not (options.resume or options.overwrite):
        raise AgentWorldError(f"{out} exists; pass --resume to continue it or --overwrite")
    failures: list[str] = []
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TextColumn("{task.fields[current]}"), console=console) as bar:
        task = bar.add_task("recording", total=len(items), current="")

        def on_start(scenario: Scenario) -> None:
            bar.update(task, current=scenario.name)

        def on_done(scenario: Scenario, traj: Trajectory | None, error: str | None) -> None:
            if error is not None:
                failures.append(error)
                bar.console.print(f"[red]failed[/] {scenario.name}: {error}")
            bar.advance(task)

        summary = record_to_jsonl(items, out, seed=options.seed, resume=options.resume,
                                  sandbox=SandboxConfig(wall_clock_s=options.wall_clock_s), fast=options.fast,
                                  on_start=on_start, on_done=on_done)
        bar.update(task, completed=len(items), current="")
    console.print(f"recorded {summary.recorded} scenario(s), {summary.rows} row(s) → {out}"
                  + (f"; skipped {summary.skipped} already recorded" if summary.skipped else ""))
    if summary.failed:
        console.print(f"[red]{len(summary.failed)} scenario(s) failed:[/] {', '.join(summary.failed)}")
        raise typer.Exit(1)


def _mcp(options: RecordMcpOptions, server: list[str] | None = None) -> None:
    from agentworld.domains.mcp.record import run

    run(options, server)


class RecordSearchOptions(BaseModel):
    """Run search scenarios (web_search, web_extractor, dict_memory) against a local BM25 index of HTML pages.

    The default collection is the Python documentation of the OS package python3-doc; each page's URL is
    URL_PREFIX plus its path in the folder. Nothing is fetched from the network.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    scenarios: Path = Field(description="Scenario JSON file: a list of {name, calls: [{tool, arguments}]}.")
    out: Path = Field(description="JSONL file of AgentWorldBench rows to write (atomically).")
    docs: Path | None = Field(None, description="Folder of HTML pages to index (default: the python3-doc "
                              "HTML folder).")
    url_prefix: str = Field("https://docs.python.org/3/", description="URL of the docs folder: a page's URL "
                            "is this plus its path in the folder.")
    top_k: int = Field(10, ge=1, le=100, description="Results per query.")
    overwrite: bool = Field(False, description="Replace an existing OUT.")


def _search(options: RecordSearchOptions) -> None:
    from rich.console import Console

    from agentworld.domains import DOMAINS
    from agentworld.envs.record import trajectory_rows
    from agentworld.envs.search import DOMAIN, load_search_scenarios, record_search
    from agentworld.envs.search_index import SearchIndex, default_docs_dir
    from agentworld.io import atomic_write_jsonl

    out = options.out
    if out.exists() and out.stat().st_size and not options.overwrite:
        raise AgentWorldError(f"{out} exists; pass --overwrite to replace it")
    scenarios = load_search_scenarios(options.scenarios)
    docs = options.docs or default_docs_dir()
    if docs is None:
        raise AgentWorldError("no --docs folder given and python3-doc is not installed "
                              "(apt-get install python3-doc)")
    index = SearchIndex.from_folder(docs, options.url_prefix)
    prompt = DOMAINS[DOMAIN].system_prompt
    rows = [row for sc in scenarios
            for row in trajectory_rows(record_search(sc, index, system_prompt=prompt, top_k=options.top_k))]
    atomic_write_jsonl(out, rows)
    Console(stderr=True).print(f"recorded {len(scenarios)} scenario(s), {len(rows)} row(s) over "
                               f"{len(index.documents)} page(s) → {out}")


config_command(app, RecordTerminalOptions, _terminal, name="terminal")
config_command(app, RecordMcpOptions, _mcp, name="mcp", extra={
    "server": (list[str] | None, typer.Argument(None, help="stdio mode: the real server command, after "
                                                "--."))})
config_command(app, RecordSearchOptions, _search, name="search")

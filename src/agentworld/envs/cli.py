"""``agentworld record terminal``: record scenario files into AgentWorldBench rows.

The lead mounts :data:`app` as the ``record`` command group. Example (re-creates the shipped
corpus)::

    agentworld record terminal --out src/agentworld/corpus/terminal.jsonl --overwrite
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agentworld.cli_support import new_app
from agentworld.envs.record import Scenario, builtin_scenarios_dir, load_scenarios, record_to_jsonl
from agentworld.envs.sandbox import SandboxConfig
from agentworld.errors import AgentWorldError
from agentworld.schema import Trajectory

app = new_app("Record real environments: terminal sessions in the sandbox, MCP traffic through a proxy.")


@app.callback()
def _group() -> None:
    """Record real environment sessions into AgentWorldBench rows."""


@app.command("terminal")
def terminal(
    out: Path = typer.Option(..., "--out", help="JSONL file of AgentWorldBench rows to write."),
    scenarios: Path | None = typer.Option(
        None, "--scenarios", help="Scenario JSON file or folder of *.json (default: built-in scenarios)."),
    seed: int = typer.Option(0, "--seed", help="Seed for container hostnames (same seed, same screens)."),
    resume: bool = typer.Option(False, "--resume", "--append",
                                help="Keep OUT and record only the scenarios not complete in it."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing OUT."),
    fast: bool = typer.Option(True, "--fast/--no-fast",
                              help="End a wait early once the prompt is back and the screen is stable."),
    wall_clock: float = typer.Option(900.0, "--wall-clock", help="Wall-clock limit per session (seconds)."),
) -> None:
    """Run each scenario in a fresh sandboxed bash (bubblewrap + tmux) and write its rows to OUT."""
    console = Console(stderr=True)
    try:
        items = load_scenarios(scenarios if scenarios is not None else builtin_scenarios_dir())
    except AgentWorldError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    if out.exists() and out.stat().st_size and not (resume or overwrite):
        console.print(f"[red]error:[/] {out} exists; pass --resume to continue it or --overwrite")
        raise typer.Exit(2)
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

        try:
            summary = record_to_jsonl(items, out, seed=seed, resume=resume,
                                      sandbox=SandboxConfig(wall_clock_s=wall_clock), fast=fast,
                                      on_start=on_start, on_done=on_done)
        except AgentWorldError as exc:
            console.print(f"[red]error:[/] {exc}")
            raise typer.Exit(1) from None
        bar.update(task, completed=len(items), current="")
    console.print(f"recorded {summary.recorded} scenario(s), {summary.rows} row(s) → {out}"
                  + (f"; skipped {summary.skipped} already recorded" if summary.skipped else ""))
    if summary.failed:
        console.print(f"[red]{len(summary.failed)} scenario(s) failed:[/] {', '.join(summary.failed)}")
        raise typer.Exit(1)


@app.command("mcp")
def mcp(
    out: Path = typer.Option(..., "--out", help="JSONL file to append to: an AgentWorldBench row per "
                             "answered tool call, as it is answered."),
    name: str | None = typer.Option(None, "--name", help="Trajectory id prefix (default: server name)."),
    url: str | None = typer.Option(None, "--url", help="Streamable-HTTP MCP server to proxy, e.g. "
                                   "http://127.0.0.1:8000/mcp (instead of a server command)."),
    listen_port: int = typer.Option(0, "--listen-port", help="HTTP mode: port on 127.0.0.1 to serve on; "
                                    "0 picks a free one (the URL is printed on stderr)."),
    grace_s: float = typer.Option(2.0, "--grace-s", min=0.0,
                                  help="stdio mode: seconds the server may take to exit once its input "
                                  "closes, and again after SIGTERM, before it is killed."),
    server: list[str] | None = typer.Argument(None, help="stdio mode: the real server command, after --."),
) -> None:
    """Record MCP sessions while relaying them, byte for byte, between a client and a real server.

    stdio: make `agentworld record mcp --out S.jsonl -- SERVER COMMAND...` the client's server command.

    HTTP: run `agentworld record mcp --out S.jsonl --url http://127.0.0.1:8000/mcp`, then point the
    client at the URL printed on stderr. Each answered tool call is appended to OUT as it happens;
    the rows of one session make one trajectory (ingest format `recording`).
    """
    from agentworld.envs.mcp_proxy_stdio import run_stdio_proxy

    if (url is None) == (not server):
        typer.echo("error: give either a server command after -- (stdio) or --url (HTTP), not both",
                   err=True)
        raise typer.Exit(2)
    if url is not None:
        from agentworld.envs.mcp_proxy_http import run_http_proxy

        raise typer.Exit(run_http_proxy(url, out, name=name, listen_port=listen_port))
    raise typer.Exit(run_stdio_proxy(server or [], out, name=name, grace_s=grace_s))

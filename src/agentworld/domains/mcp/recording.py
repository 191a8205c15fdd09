"""Scenarios recorded through the proxy: a real MCP client (the ``mcp`` SDK) against a real server.

Why: each scenario runs a client whose server command is the recording proxy itself
(``agentworld record mcp --out … -- <server>``), so the rows are what any client's session through
the proxy records. Each server runs in a fresh folder that a :class:`~agentworld.envs.janitor.Janitor`
removes, with every process started for it, even when the recorder is killed. The folder's random
path is written ``/workspace`` in rows, so re-recording gives the same observations apart from
runtime metadata (file dates of ``get_file_info``).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentworld.domains.mcp.rows import DOMAIN
from agentworld.errors import AgentWorldError

if TYPE_CHECKING:
    from agentworld.domains.mcp.scenarios import McpScenario
    from agentworld.domains.mcp.servers import PathMap
    from agentworld.envs.janitor import Janitor
    from agentworld.schema import Trajectory

GRACE_S = 0.3
"""Every call is answered before the session ends, so a server ignoring EOF gets SIGTERM soon after."""


class RecordError(AgentWorldError):
    """A scenario could not be recorded (its server did not start or the session broke)."""


def _tail(path: Path, lines: int = 8) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def record_scenario(scenario: McpScenario, *, janitor: Janitor, command: Sequence[str] | None = None,
                    timeout_s: float = 60.0) -> Trajectory:
    """Record one :class:`~agentworld.domains.mcp.scenarios.McpScenario` into a trajectory.

    ``command`` replaces the preset's server command (``{root}`` = the scenario's folder).
    """
    from agentworld.domains.mcp.servers import PathMap, preset
    from agentworld.envs.mcp_client import McpClient
    from agentworld.io import read_journal

    server = preset(scenario.server)
    run_dir = Path(tempfile.mkdtemp(prefix=f"agentworld-mcp-{os.getpid()}-")).resolve()  # as servers name it
    janitor.track(run_dir)
    started, clock = datetime.now(UTC).isoformat(timespec="seconds"), time.monotonic()
    try:
        root = run_dir / "workspace"
        root.mkdir()
        server.prepare(root, scenario.files, scenario.changes)
        argv = [c.replace("{root}", str(root)) for c in command] if command else server.argv(root)
        journal = run_dir / "calls.jsonl"
        proxy = [sys.executable, "-m", "agentworld", "record", "mcp", "--out", str(journal),
                 "--name", scenario.name, "--grace-s", str(GRACE_S), "--", *argv]
        paths = PathMap(str(root))
        with (run_dir / "stderr.log").open("w", encoding="utf-8") as errlog:
            try:
                with McpClient(proxy, env={**server.environment(root), **janitor.env}, cwd=root,
                               errlog=errlog, timeout_s=timeout_s,
                               label=f"{argv[0]} (scenario {scenario.name!r})") as client:
                    for call in scenario.calls:
                        client.call(call.tool, paths.actual(call.arguments))
            except Exception as exc:
                raise RecordError(f"scenario {scenario.name!r} ({scenario.server}): {exc}\n"
                                  f"{_tail(run_dir / 'stderr.log')}") from exc
        rows = list(read_journal(journal))
        if len(rows) != len(scenario.calls):
            raise RecordError(f"scenario {scenario.name!r}: {len(rows)} of {len(scenario.calls)} calls "
                              f"were answered\n{_tail(run_dir / 'stderr.log')}")
        return _trajectory(scenario, rows[-1], paths, started, time.monotonic() - clock)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def _trajectory(scenario: McpScenario, last: dict[str, Any], paths: PathMap, started: str,
                elapsed_s: float) -> Trajectory:
    """The session's last proxy row (it holds every turn) as a trajectory, paths shown as /workspace."""
    from agentworld.schema import Trajectory, Turn

    meta = last.get("meta") or {}
    kept = ("tool", "is_error", "latency_s")
    per_turn = meta.get("turns") or [{}] * len(last["prompt"])
    turns = tuple(Turn(action=paths.shown(a), observation=paths.shown(o), meta={k: m.get(k) for k in kept})
                  for a, o, m in zip(last["prompt"], last["response"], per_turn, strict=True))
    info = {"source": "real", "recorder": "agentworld record mcp", "scenario": scenario.name,
            "server": scenario.server, "server_info": meta.get("server"),
            "protocol_version": meta.get("protocol_version"), "started_at": started,
            "elapsed_s": round(elapsed_s, 3)}
    return Trajectory(id=scenario.name, domain=DOMAIN, task=DOMAIN, turns=turns, meta=info,
                      system_prompt=paths.shown(last["system_str"]))


def trajectory_rows(trajectory: Trajectory) -> list[dict[str, Any]]:
    """AgentWorldBench rows of a trajectory; each carries the recording's ``meta``."""
    return [{**s.to_row(), "meta": trajectory.meta} for s in trajectory.samples()]


def _complete(out: Path) -> set[str]:
    """Scenario names whose every row is in ``out``; rows of partial ones are dropped (atomic rewrite)."""
    from agentworld.io import atomic_write_jsonl, read_journal

    rows = list(read_journal(out)) if out.exists() else []
    counts: dict[str, int] = {}
    totals: dict[str, int] = {}
    for row in rows:
        name = str(row.get("id", "")).rpartition("-t")[0]
        counts[name] = counts.get(name, 0) + 1
        totals[name] = int(row.get("total_turns") or 0)
    done = {n for n, c in counts.items() if c == totals[n]}
    kept = [r for r in rows if str(r.get("id", "")).rpartition("-t")[0] in done]
    if len(kept) != len(rows):
        atomic_write_jsonl(out, kept)
    return done


def record_to_jsonl(scenarios: Sequence[McpScenario], out: str | Path, *,
                    command: Sequence[str] | None = None, resume: bool = False,
                    on_done: Callable[[McpScenario, str | None], None] | None = None) -> int:
    """Record scenarios into ``out`` (rows of a scenario appended once it is whole); rows written.

    A scenario that fails is reported through ``on_done(scenario, error)`` and skipped.
    """
    from agentworld.envs.janitor import Janitor
    from agentworld.io import JsonlJournal

    out = Path(out)
    skip = _complete(out) if resume else set()
    if not resume and out.exists():
        out.unlink()
    written = 0
    with Janitor() as janitor:
        journal = JsonlJournal(out)
        try:
            for scenario in scenarios:
                if scenario.name in skip:
                    continue
                try:
                    rows = trajectory_rows(record_scenario(scenario, janitor=janitor, command=command))
                except RecordError as exc:
                    if on_done is not None:
                        on_done(scenario, str(exc))
                    continue
                for row in rows:
                    journal.append(row, sync=False)
                journal.sync()
                written += len(rows)
                if on_done is not None:
                    on_done(scenario, None)
        finally:
            journal.close()
    return written

"""``agentworld record swe``: scripted coding-agent sessions in a real repository → AgentWorldBench rows.

A scenario names a vendored repository and a list of tool calls; each scenario runs in a fresh
sandboxed workspace (:class:`~agentworld.domains.swe.env.SweEnvironment`) and becomes one trajectory
in the ``swe`` domain. The first action carries the workspace's folder tree as ``**Current State:**``
(as the terminal's first action carries its screen). Re-recording gives the same observations except
runtime metadata; with ``normalise`` (the default) test-run durations are written as fixed values so
the shipped corpus does not change on every recording.

Scenario file (JSON Lines, one scenario per line)::

    {"name": "inflection-fix-camelize", "repo": "inflection",
     "calls": [{"tool": "read_file", "arguments": {"absolute_path": "/app/setup.py"}}, …]}
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentworld.domains.actions import format_tool_action
from agentworld.domains.base import RecorderCommand
from agentworld.errors import AgentWorldError, DataError
from agentworld.schema import OBSERVATION_MARKER, Trajectory, Turn

DOMAIN = "swe"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
TOOLS = ("run_shell_command", "read_file", "write_file", "replace", "list_directory", "glob",
         "search_file_content", "todo_write")
_COUNTS = r"\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected|tests? collected)"
_OUTPUT = r"(?:Output: )?"
"""A shell tool result puts the output's first line on its ``Output:`` line (``pytest -q | tail -1``)."""
_DURATIONS = (re.compile(rf"(?m)^({_OUTPUT}=* ?(?:{_COUNTS}[^\n]*?|no tests ran) in )\d+(?:\.\d+)?s"
                         r"((?: \([^)\n]*\))? ?=*)$"),
              re.compile(rf"(?m)^({_OUTPUT}Ran \d+ tests? in )\d+\.\d+s$"))


@dataclass(frozen=True)
class Call:
    tool: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class SweScenario:
    name: str
    repo: str
    calls: tuple[Call, ...]


def scenarios_dir() -> Path:
    """The shipped scenario files (``train.jsonl`` is recorded into the corpus, ``heldout.jsonl`` not)."""
    return Path(str(resources.files("agentworld.domains.swe") / "scenarios"))


def _parse(item: Any, *, path: str, line: int | None) -> SweScenario:
    from agentworld.domains.swe.repos import REPOSITORIES

    name = item.get("name") if isinstance(item, dict) else None

    def fail(message: str, fld: str | None = None) -> DataError:
        return DataError(message, path=path, line=line, field=fld,
                         sample_id=name if isinstance(name, str) else None)

    if not isinstance(item, dict):
        raise fail("expected a JSON object")
    if unknown := sorted(set(item) - {"name", "repo", "calls", "description"}):
        raise fail(f"unknown keys {unknown}", unknown[0])
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise fail("name must be a non-empty string of letters, digits, '.', '_' or '-'", "name")
    if item.get("repo") not in REPOSITORIES:
        raise fail(f"repo must be one of {', '.join(REPOSITORIES)}", "repo")
    raw = item.get("calls")
    if not isinstance(raw, list) or not raw:
        raise fail("calls must be a non-empty list of {tool, arguments}", "calls")
    calls: list[Call] = []
    for i, c in enumerate(raw):
        if not isinstance(c, dict) or set(c) - {"tool", "arguments"} or not isinstance(c.get("tool"), str):
            raise fail("expected {tool, arguments}", f"calls[{i}]")
        if not isinstance(c.get("arguments", {}), dict):
            raise fail("arguments must be an object", f"calls[{i}].arguments")
        calls.append(Call(c["tool"], c.get("arguments", {})))
    return SweScenario(name=name, repo=item["repo"], calls=tuple(calls))


def load_swe_scenarios(path: str | Path) -> list[SweScenario]:
    """Read a JSONL scenario file; names must be unique.

    Raises:
        DataError: naming the file, line and bad field.
    """
    from agentworld.domains.records_file import read_records

    return read_records(path, lambda item, line: _parse(item, path=str(path), line=line), lambda s: s.name)


def normalise(text: str) -> str:
    """Test-run durations (pytest's ``… passed in 1.47s``, ``455 tests collected in 0.39s``, unittest's
    ``Ran 3 tests in 0.002s``) fixed, also on a shell result's ``Output:`` line.

    >>> normalise("Output: 455 passed in 0.67s")
    'Output: 455 passed in 0.50s'
    """
    text = _DURATIONS[0].sub(r"\g<1>0.50s\g<2>", text)
    return _DURATIONS[1].sub(r"\g<1>0.050s", text)


def record_swe(scenario: SweScenario, *, seed: int = 0, normalised: bool = True) -> Trajectory:
    """Record one scenario in a fresh workspace and return its :class:`~agentworld.schema.Trajectory`."""
    from agentworld.domains import DOMAINS
    from agentworld.domains.swe.env import SweEnvironment

    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.monotonic()
    turns: list[Turn] = []
    with SweEnvironment(scenario.repo, seed=f"{seed}:{scenario.name}") as env:
        state: str | None = env.initial_observation()
        for call in scenario.calls:
            t_turn = time.monotonic()
            action = format_tool_action(call.tool, call.arguments)
            text = env.step(action)
            if normalised:
                text = normalise(text)
            head = f"**Current State:**\n{state}\n\n" if state is not None else ""
            turns.append(Turn(action=head + action, observation=f"{OBSERVATION_MARKER}\n{text}",
                              meta={"elapsed_s": round(time.monotonic() - t_turn, 3)}))
            state = None
    meta = {"source": "real", "elapsed_s": round(time.monotonic() - t0, 3), "started_at": started_at,
            "scenario": scenario.name, "repo": scenario.repo, "seed": seed, "normalised": normalised}
    return Trajectory(id=scenario.name, domain=DOMAIN, task=DOMAIN,
                      system_prompt=DOMAINS[DOMAIN].system_prompt, turns=tuple(turns), meta=meta)


def trajectory_rows(trajectory: Trajectory) -> list[dict[str, Any]]:
    """AgentWorldBench rows of a trajectory; each carries the recording's ``meta``."""
    return [{**s.to_row(), "meta": trajectory.meta} for s in trajectory.samples()]


def record_to_jsonl(scenarios: Sequence[SweScenario], out: str | Path, *, seed: int = 0, resume: bool = False,
                    normalised: bool = True,
                    on_done: Callable[[SweScenario, int], None] | None = None) -> int:
    """Record scenarios into ``out`` one trajectory at a time (crash-safe journal); returns rows written.

    With ``resume`` the scenarios whose rows are all in ``out`` are skipped (rows of a scenario cut
    off half-way are dropped first); without it ``out`` is started afresh.
    """
    from agentworld.io import JsonlJournal, atomic_write_jsonl, read_journal

    out = Path(out)
    done: set[str] = set()
    if resume and out.exists():
        rows = [r for r in read_journal(out) if isinstance(r, dict)]
        ids = {str(r.get("id")) for r in rows}
        wanted = {s.name: {f"{s.name}-t{i}" for i in range(1, len(s.calls) + 1)} for s in scenarios}
        done = {name for name, want in wanted.items() if want <= ids}
        partial = {i for name, want in wanted.items() if name not in done for i in want & ids}
        if partial:
            atomic_write_jsonl(out, [r for r in rows if str(r.get("id")) not in partial])
    elif out.exists():
        out.unlink()
    written = 0
    with JsonlJournal(out) as journal:
        for scenario in scenarios:
            if scenario.name in done:
                continue
            rows = trajectory_rows(record_swe(scenario, seed=seed, normalised=normalised))
            for row in rows:
                journal.append(row)
            written += len(rows)
            if on_done is not None:
                on_done(scenario, len(rows))
    return written


class RecordSweOptions(BaseModel):
    """Run SWE scenarios (coding-agent tool calls) in fresh sandboxed workspaces of real repositories."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scenarios: Path | None = Field(None, description="Scenario JSONL file: one {name, repo, calls: [{tool, "
                                   "arguments}]} per line (default: the shipped training scenarios).")
    out: Path = Field(description="JSONL file of AgentWorldBench rows to write.",
                      json_schema_extra={"output": "file"})
    seed: int = Field(0, description="Seed of the sandbox hostnames (same seed, same observations).")
    resume: bool = Field(False, description="Keep OUT and record only the scenarios not complete in it.")
    overwrite: bool = Field(False, description="Replace an existing OUT.")
    normalise: bool = Field(True, description="Write test-run durations as fixed values (a stable corpus).")


def run(options: RecordSweOptions) -> None:
    """The command: record, then print one summary line on stderr."""
    import sys

    out = options.out
    if out.exists() and out.stat().st_size and not (options.resume or options.overwrite):
        raise AgentWorldError(f"{out} exists; pass --resume to continue it or --overwrite")
    scenarios = load_swe_scenarios(options.scenarios or scenarios_dir() / "train.jsonl")
    t0 = time.monotonic()
    rows = record_to_jsonl(scenarios, out, seed=options.seed, resume=options.resume,
                           normalised=options.normalise,
                           on_done=lambda s, n: print(f"recorded {s.name}: {n} turn(s)", file=sys.stderr))
    print(f"recorded {len(scenarios)} scenario(s), {rows} row(s) in {time.monotonic() - t0:.1f}s → {out}",
          file=sys.stderr)


COMMAND = RecorderCommand(options=RecordSweOptions, run=run,
                          help="Record SWE scenarios (coding-agent tools in a sandboxed repository).")

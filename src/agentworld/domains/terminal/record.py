"""Scenarios → recorded terminal trajectories → AgentWorldBench rows.

Why: a world model of the terminal is only as good as the real screens it learns from and is
scored against. A *scenario* is a scripted list of Terminal-Bench keystroke actions; each runs in a
fresh sandboxed bash (:class:`~agentworld.envs.terminal.TerminalSession`), and its screens become a
:class:`~agentworld.schema.Trajectory` in the terminal domain, with action/observation text
formatted exactly as in ``docs/CONTRACTS.md``. Recording is deterministic given the seed
(hostname from seed and scenario name, fixed TZ, umask, locale and git dates); only runtime
details such as file dates, PIDs and timings can differ between two recordings.

Scenario file (JSON): ``[{"name": str, "actions": [[{"keystrokes": str, "duration": float}, …], …],
"setup": [shell command, …]}]`` — one inner list per turn; ``setup`` (optional) runs before the
session starts and is not recorded (files it writes under ``/app`` and ``/root`` persist).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from agentworld.domains.actions import format_terminal_action
from agentworld.envs.sandbox import SandboxConfig, SandboxError, container_id
from agentworld.envs.terminal import MAX_DURATION_S, TerminalSession
from agentworld.errors import AgentWorldError, DataError
from agentworld.inputs import parse_json, read_text
from agentworld.io import JsonlJournal, atomic_write_jsonl, read_journal
from agentworld.schema import OBSERVATION_MARKER, Trajectory, Turn

DOMAIN = "terminal"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class RecordError(AgentWorldError):
    """A scenario could not be recorded (its setup failed or the session died)."""


@dataclass(frozen=True)
class Action:
    """One Terminal-Bench keystroke action; ``duration`` keeps its JSON type (``1`` vs ``1.0``)."""

    keystrokes: str
    duration: float | int

    def to_json(self) -> dict[str, Any]:
        return {"keystrokes": self.keystrokes, "duration": self.duration}


@dataclass(frozen=True)
class Scenario:
    """A scripted session: one tuple of actions per turn, plus unrecorded setup commands."""

    name: str
    actions: tuple[tuple[Action, ...], ...]
    setup: tuple[str, ...] = ()
    source: str | None = None


def builtin_scenarios_dir() -> Path:
    """The folder of scenario files shipped with the package (the corpus is recorded from it)."""
    return Path(str(resources.files("agentworld.domains.terminal") / "scenarios"))


def _parse_scenario(item: Any, *, path: str, index: int) -> Scenario:
    def fail(message: str, field: str) -> DataError:
        return DataError(f"scenario {index}: {message}", path=path, field=field,
                         sample_id=item.get("name") if isinstance(item, dict) and
                         isinstance(item.get("name"), str) else None)

    if not isinstance(item, dict):
        raise DataError(f"scenario {index}: expected an object", path=path)
    unknown = set(item) - {"name", "actions", "setup", "description"}
    if unknown:
        raise fail(f"unknown keys {sorted(unknown)}", sorted(unknown)[0])
    name = item.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise fail("name must be a non-empty string of letters, digits, '.', '_' or '-'", "name")
    raw_turns = item.get("actions")
    if not isinstance(raw_turns, list) or not raw_turns:
        raise fail("actions must be a non-empty list of turns", "actions")
    turns: list[tuple[Action, ...]] = []
    for t, raw_turn in enumerate(raw_turns):
        if not isinstance(raw_turn, list) or not raw_turn:
            raise fail(f"turn {t}: expected a non-empty list of actions", f"actions[{t}]")
        acts: list[Action] = []
        for a, raw in enumerate(raw_turn):
            where = f"actions[{t}][{a}]"
            if not isinstance(raw, dict) or set(raw) - {"keystrokes", "duration"}:
                raise fail("expected an object with keys keystrokes and duration", where)
            keys, duration = raw.get("keystrokes"), raw.get("duration", 1.0)
            if not isinstance(keys, str):
                raise fail("keystrokes must be a string", f"{where}.keystrokes")
            if (not isinstance(duration, int | float) or isinstance(duration, bool)
                    or not 0 <= duration <= MAX_DURATION_S):
                raise fail(f"duration must be a number of seconds in 0..{MAX_DURATION_S:g}",
                           f"{where}.duration")
            acts.append(Action(keys, duration))
        turns.append(tuple(acts))
    setup = item.get("setup", [])
    if not isinstance(setup, list) or not all(isinstance(c, str) for c in setup):
        raise fail("setup must be a list of shell command strings", "setup")
    return Scenario(name=name, actions=tuple(turns), setup=tuple(setup), source=path)


def load_scenarios(path: str | Path) -> list[Scenario]:
    """Read a scenario file, or every ``*.json`` of a folder (sorted); names must be unique.

    An item that is a string names a built-in scenario, so a file can list scenarios without copying
    them. The held-out scenarios (``heldout.json``) are written out in full instead: they are not in
    the built-in folder, so a corpus recorded from it never holds them.

    Raises:
        DataError: naming the file, the scenario index and the bad field.
    """
    root = Path(path)
    if root.is_dir():
        files = sorted(root.glob("*.json"))
        if not files:
            raise DataError("folder holds no *.json scenario files", path=str(root))
    elif root.is_file():
        files = [root]
    else:
        raise DataError("no such scenario file or folder", path=str(root))
    out: list[Scenario] = []
    seen: dict[str, str] = {}
    for file in files:
        data = parse_json(read_text(file, what="scenario file"), path=file)
        if not isinstance(data, list):
            raise DataError("expected a JSON list of scenarios", path=str(file))
        for index, item in enumerate(data):
            scenario = (_builtin_named(item, path=str(file), index=index) if isinstance(item, str)
                        else _parse_scenario(item, path=str(file), index=index))
            if scenario.name in seen:
                raise DataError(f"scenario {index}: duplicate name (first in {seen[scenario.name]})",
                                path=str(file), sample_id=scenario.name, field="name")
            seen[scenario.name] = str(file)
            out.append(scenario)
    return out


def _builtin_named(name: str, path: str, index: int) -> Scenario:
    builtin = {s.name: s for s in load_scenarios(builtin_scenarios_dir())}
    if name not in builtin:
        raise DataError(f"scenario {index}: no built-in scenario named {name!r}", path=path, sample_id=name,
                        field="name")
    return builtin[name]


def format_action(actions: Sequence[Action], initial_screen: str | None = None) -> str:
    """The user-turn text of one action, as in the official few-shot examples (CONTRACTS.md)."""
    return format_terminal_action([a.to_json() for a in actions], initial_screen)


def format_observation(screen: str) -> str:
    return f"{OBSERVATION_MARKER}\n{screen}"


def _system_prompt() -> str:
    from agentworld.domains import DOMAINS

    return DOMAINS[DOMAIN].system_prompt


def record_scenario(scenario: Scenario, *, seed: int = 0, sandbox: SandboxConfig | None = None,
                    fast: bool = True) -> Trajectory:
    """Record one scenario in a fresh sandbox (fresh ``/app``) and return its trajectory."""
    from agentworld.envs.sandbox import Sandbox

    config = replace(sandbox or SandboxConfig(), hostname=container_id(f"{seed}:{scenario.name}"))
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.monotonic()
    turns: list[Turn] = []
    with Sandbox(config) as box:
        for command in scenario.setup:
            result = box.run(command, timeout=60)
            if result.returncode != 0 or result.timed_out:
                raise RecordError(f"scenario {scenario.name!r}: setup command {command!r} failed "
                                  f"(exit {result.returncode}): {result.stderr.strip()[-500:]}")
        with TerminalSession(sandbox=box, fast=fast) as term:
            initial: str | None = term.initial_screen()
            for index, acts in enumerate(scenario.actions, start=1):
                if not term.alive:
                    raise RecordError(f"scenario {scenario.name!r}: the shell exited before turn {index}")
                t_turn = time.monotonic()
                try:
                    screen = term.step([a.to_json() for a in acts])
                except SandboxError as exc:
                    raise RecordError(f"scenario {scenario.name!r}, turn {index}: {exc}") from exc
                turns.append(Turn(action=format_action(acts, initial), observation=format_observation(screen),
                                  meta={"elapsed_s": round(time.monotonic() - t_turn, 3)}))
                initial = None
    meta = {"source": "real", "elapsed_s": round(time.monotonic() - t0, 3), "started_at": started_at,
            "scenario": scenario.name, "seed": seed, "hostname": config.hostname}
    return Trajectory(id=scenario.name, domain=DOMAIN, task=DOMAIN, system_prompt=_system_prompt(),
                      turns=tuple(turns), meta=meta)


def record_scenarios(scenarios: Iterable[Scenario], *, seed: int = 0, sandbox: SandboxConfig | None = None,
                     progress: Callable[[Scenario], None] | None = None,
                     fast: bool = True) -> Iterator[Trajectory]:
    """Record each scenario in its own fresh session, yielding trajectories as they finish.

    Args:
        scenarios: what to record, in order.
        seed: makes hostnames (and so screens) reproducible.
        sandbox: limits for every session (its ``hostname`` is replaced per scenario).
        progress: called with each scenario just before it is recorded.
        fast: end waits early once a prompt is stable (see :class:`TerminalSession`).
    """
    for scenario in scenarios:
        if progress is not None:
            progress(scenario)
        yield record_scenario(scenario, seed=seed, sandbox=sandbox, fast=fast)


def trajectory_rows(trajectory: Trajectory) -> list[dict[str, Any]]:
    """AgentWorldBench rows of a recorded trajectory; each carries the recording's ``meta``."""
    return [{**s.to_row(), "meta": trajectory.meta} for s in trajectory.samples()]


def recorded_scenarios(path: str | Path, scenarios: Sequence[Scenario]) -> set[str]:
    """Names of the scenarios whose every row is already in ``path`` (for resuming).

    Rows of scenarios recorded only in part (a crash mid-trajectory) are removed from the file
    (atomic rewrite), so recording them again does not duplicate ids.
    """
    path = Path(path)
    rows = list(read_journal(path))
    if not rows:
        return set()
    ids = {str(r.get("id")) for r in rows if isinstance(r, dict)}
    done: set[str] = set()
    partial: set[str] = set()
    for sc in scenarios:
        wanted = {f"{sc.name}-t{i}" for i in range(1, len(sc.actions) + 1)}
        have = wanted & ids
        if have == wanted:
            done.add(sc.name)
        elif have:
            partial |= have
    if partial:
        atomic_write_jsonl(path, [r for r in rows if str(r.get("id")) not in partial])
    return done


@dataclass(frozen=True)
class RecordSummary:
    recorded: int
    skipped: int
    rows: int
    failed: tuple[str, ...]


def record_to_jsonl(scenarios: Sequence[Scenario], out: str | Path, *, seed: int = 0,
                    resume: bool = False, sandbox: SandboxConfig | None = None, fast: bool = True,
                    on_start: Callable[[Scenario], None] | None = None,
                    on_done: Callable[[Scenario, Trajectory | None, str | None], None] | None = None,
                    ) -> RecordSummary:
    """Record scenarios into a JSONL file of AgentWorldBench rows, one trajectory at a time.

    Rows are appended through a :class:`~agentworld.io.JsonlJournal` (crash-safe). With
    ``resume`` the scenarios already complete in ``out`` are skipped; without it ``out`` is
    started afresh. A scenario that fails is reported and the others still run.
    """
    out = Path(out)
    done = recorded_scenarios(out, scenarios) if resume else set()
    if not resume and out.exists():
        out.unlink()
    todo = [s for s in scenarios if s.name not in done]
    recorded = rows = 0
    failed: list[str] = []
    with JsonlJournal(out) as journal:
        for scenario in todo:
            if on_start is not None:
                on_start(scenario)
            try:
                traj = record_scenario(scenario, seed=seed, sandbox=sandbox, fast=fast)
            except (RecordError, SandboxError) as exc:
                failed.append(scenario.name)
                if on_done is not None:
                    on_done(scenario, None, str(exc))
                continue
            for row in trajectory_rows(traj):
                journal.append(row)
                rows += 1
            recorded += 1
            if on_done is not None:
                on_done(scenario, traj, None)
    return RecordSummary(recorded=recorded, skipped=len(scenarios) - len(todo), rows=rows,
                         failed=tuple(failed))

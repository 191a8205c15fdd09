"""``agentworld record web``: scripted browser sessions on the local sites → AgentWorldBench rows.

Scenario file (JSONL, one scenario a line)::

    {"name": "shop-search", "start": "/", "seed": 0,
     "actions": ["click({{link 'Catalog'}})", "fill({{searchbox 'Search'}}, 'moss')", ...]}

``start`` is a path on the shop or ``miniwob/<task>``; ``seed`` seeds MiniWoB++'s generator. Each
action is a BrowserGym call; ``{{role 'name'}}`` (or ``{{role 'name' #2}}`` for the second such node)
stands for the bid of that node on the current page, so scenarios need not know bids in advance —
the recorded action carries the real bid. One browser serves all scenarios, each in a fresh context
with an empty shop. Rows are appended one trajectory at a time (``--resume`` continues a file).
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

from agentworld.domains.base import RecorderCommand
from agentworld.errors import AgentWorldError, DataError

DOMAIN = "web"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
PLACEHOLDER = re.compile(r"\{\{(?P<role>[\w-]+) '(?P<name>(?:[^'\\]|\\.)*)'(?: #(?P<n>\d+))?\}\}")


class RecordError(AgentWorldError):
    """A scenario could not be recorded (a placeholder names no node, the browser failed)."""


@dataclass(frozen=True)
class WebScenario:
    name: str
    actions: tuple[str, ...]
    start: str = "/"
    seed: int = 0


def builtin_scenarios(split: str = "train") -> Path:
    """A scenario file shipped with the package (``train`` or ``heldout``)."""
    return Path(str(resources.files("agentworld.domains.web") / "scenarios" / f"{split}.jsonl"))


def _parse(item: Any, *, path: str, line: int | None) -> WebScenario:
    name = item.get("name") if isinstance(item, dict) else None

    def fail(message: str, fld: str | None = None) -> DataError:
        return DataError(message, path=path, line=line, field=fld,
                         sample_id=name if isinstance(name, str) else None)

    if not isinstance(item, dict):
        raise fail("expected an object")
    if unknown := sorted(set(item) - {"name", "start", "seed", "actions", "description"}):
        raise fail(f"unknown keys {unknown}", unknown[0])
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise fail("name must be a non-empty string of letters, digits, '.', '_' or '-'", "name")
    actions = item.get("actions")
    if not isinstance(actions, list) or not actions or not all(isinstance(a, str) and a.strip()
                                                                for a in actions):
        raise fail("actions must be a non-empty list of BrowserGym calls (strings)", "actions")
    start, seed = item.get("start", "/"), item.get("seed", 0)
    if not isinstance(start, str) or not (start.startswith("/") or start.startswith("miniwob/")):
        raise fail("start must be a path (/...) or miniwob/<task>", "start")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**31:
        raise fail("seed must be a non-negative integer", "seed")
    return WebScenario(name=name, actions=tuple(actions), start=start, seed=seed)


def load_web_scenarios(path: str | Path) -> list[WebScenario]:
    """Read a scenario JSONL file; names must be unique.

    Raises:
        DataError: naming the file, line, scenario and field.
    """
    from agentworld.domains.records_file import read_records

    return read_records(path, lambda item, line: _parse(item, path=str(path), line=line), lambda s: s.name)


def resolve_placeholders(action: str, page: str) -> str:
    """Replace each ``{{role 'name'}}`` by the quoted bid of that node on ``page``.

    Raises:
        RecordError: a placeholder matches no node with a bid.
    """
    def bid(m: re.Match[str]) -> str:
        wanted = f"{m.group('role')} '{m.group('name')}'"
        found = [b for b, rest in re.findall(r"^\s*\[([^\]]+)\] (.*)$", page, re.M)
                 if rest == wanted or rest.startswith((wanted + ",", wanted + " "))]
        n = int(m.group("n") or 1)
        if len(found) < n:
            raise RecordError(f"no node {wanted}{f' #{n}' if n > 1 else ''} with a bid on the current page")
        return repr(found[n - 1])

    return PLACEHOLDER.sub(bid, action)


def _system_prompt() -> str:
    from agentworld.domains import DOMAINS

    return DOMAINS[DOMAIN].system_prompt


def record_web_scenario(scenario: WebScenario, *, browser: Any = None, site: Any = None) -> Any:
    """Record one scenario (in a fresh context of ``browser`` when given) into a trajectory."""
    from agentworld.domains.web.actions import format_web_action
    from agentworld.domains.web.env import WebEnvironment
    from agentworld.schema import OBSERVATION_MARKER, Trajectory, Turn

    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.monotonic()
    turns: list[Turn] = []
    with WebEnvironment(seed=scenario.seed, start=scenario.start, browser=browser, site=site) as env:
        page = env.initial_observation()
        first: str | None = page
        for index, template in enumerate(scenario.actions, start=1):
            try:
                call = resolve_placeholders(template, page)
            except RecordError as exc:
                raise RecordError(f"scenario {scenario.name!r}, turn {index}: {exc}") from None
            t_turn = time.monotonic()
            page = env.step(call)
            turns.append(Turn(action=format_web_action(call, first),
                              observation=f"{OBSERVATION_MARKER}\n{page}",
                              meta={"elapsed_s": round(time.monotonic() - t_turn, 3)}))
            first = None
        blocked = len(env.blocked)
    meta = {"source": "real", "elapsed_s": round(time.monotonic() - t0, 3), "started_at": started_at,
            "scenario": scenario.name, "start": scenario.start, "seed": scenario.seed,
            "blocked_requests": blocked}
    return Trajectory(id=scenario.name, domain=DOMAIN, task=DOMAIN, system_prompt=_system_prompt(),
                      turns=tuple(turns), meta=meta)


def _done(out: Path, scenarios: Sequence[WebScenario]) -> set[str]:
    """Scenarios complete in ``out``; rows of half-recorded ones are dropped (atomic rewrite)."""
    from agentworld.io import atomic_write_jsonl, read_journal

    rows = [r for r in read_journal(out) if isinstance(r, dict)]
    ids = {str(r.get("id")) for r in rows}
    done, partial = set(), set()
    for sc in scenarios:
        wanted = {f"{sc.name}-t{i}" for i in range(1, len(sc.actions) + 1)}
        if wanted <= ids:
            done.add(sc.name)
        else:
            partial |= wanted & ids
    if partial:
        atomic_write_jsonl(out, [r for r in rows if str(r.get("id")) not in partial])
    return done


def record_web_to_jsonl(scenarios: Sequence[WebScenario], out: Path, *, resume: bool = False,
                        progress: Callable[[str], None] | None = None) -> tuple[int, int, list[str]]:
    """Record scenarios into ``out`` (appended per trajectory); (recorded, rows, failed names)."""
    from agentworld.domains.web.env import WebSite
    from agentworld.envs.browser import BrowserError, BrowserSession
    from agentworld.io import JsonlJournal

    done = _done(out, scenarios) if resume and out.exists() else set()
    if not resume and out.exists():
        out.unlink()
    todo = [s for s in scenarios if s.name not in done]
    recorded = rows = 0
    failed: list[str] = []
    site = WebSite()
    site.start()
    try:
        with BrowserSession(allowed_origins=(site.origin,)) as browser, JsonlJournal(out) as journal:
            for scenario in todo:
                if progress is not None:
                    progress(scenario.name)
                try:
                    traj = record_web_scenario(scenario, browser=browser, site=site)
                except (RecordError, BrowserError) as exc:
                    failed.append(f"{scenario.name} ({exc})")
                    continue
                for sample in traj.samples():
                    journal.append({**sample.to_row(), "meta": traj.meta})
                    rows += 1
                recorded += 1
    finally:
        site.stop()
    return recorded, rows, failed


class RecordWebOptions(BaseModel):
    """Drive headless Chromium with BrowserGym actions on the local shop and MiniWoB++; write rows to OUT."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    out: Path = Field(description="JSONL file of AgentWorldBench rows to write.",
                      json_schema_extra={"output": "file"})
    scenarios: Path | None = Field(None, description="Scenario JSONL file (default: the built-in training "
                                   "scenarios).")
    resume: bool = Field(False, description="Keep OUT and record only the scenarios not complete in it.")
    overwrite: bool = Field(False, description="Replace an existing OUT.")


def run(options: RecordWebOptions) -> None:
    from rich.console import Console

    console = Console(stderr=True)
    out = options.out
    if out.exists() and out.stat().st_size and not (options.resume or options.overwrite):
        raise AgentWorldError(f"{out} exists; pass --resume to continue it or --overwrite")
    scenarios = load_web_scenarios(options.scenarios or builtin_scenarios("train"))
    t0 = time.monotonic()
    recorded, rows, failed = record_web_to_jsonl(scenarios, out, resume=options.resume,
                                                 progress=lambda name: console.print(f"recording {name}"))
    console.print(f"recorded {recorded} scenario(s), {rows} row(s) in {time.monotonic() - t0:.1f}s → {out}")
    if failed:
        raise AgentWorldError(f"{len(failed)} scenario(s) failed: {'; '.join(failed)}")


COMMAND = RecorderCommand(options=RecordWebOptions, run=run, help=RecordWebOptions.__doc__ or "")

"""``agentworld record search``: scripted research scenarios against the real search tools, as rows.

Scenario files are JSONL (one scenario a line) or a JSON list; a scenario is
``{"name": str, "description"?: str, "calls": [{"tool": str, "arguments": {...}}, …]}``. Each runs in a
fresh :class:`~agentworld.domains.search.env.SearchEnvironment` (empty memory) and becomes one trajectory
of AgentWorldBench rows in the ``search`` domain. Rows hold no timings or dates, so recording the same
scenarios over the same folder writes the same file. Rows are appended one scenario at a time (a killed
run keeps what it finished; ``--resume`` continues it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentworld.cli_support import cli_flags
from agentworld.domains.base import RecorderCommand
from agentworld.envs.search_index import PYTHON_DOCS_URL, PageIssue
from agentworld.errors import AgentWorldError, DataError

DOMAIN = "search"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_TOOLS = ("web_search", "web_extractor", "dict_memory")


@dataclass(frozen=True)
class SearchScenario:
    name: str
    calls: tuple[tuple[str, dict[str, Any]], ...]
    description: str = ""


def scenarios_file(split: str = "train") -> Path:
    """A shipped scenario file: ``train`` (the corpus) or ``heldout`` (what a demo records fresh)."""
    return Path(str(resources.files("agentworld.domains.search") / "scenarios" / f"{split}.jsonl"))


def _parse(item: Any, *, path: str, line: int | None, index: int) -> SearchScenario:
    name = item.get("name") if isinstance(item, dict) else None

    def fail(message: str, fld: str | None = None) -> DataError:
        return DataError(message if line is not None else f"scenario {index}: {message}", path=path,
                         line=line, field=fld, sample_id=name if isinstance(name, str) else None)

    if not isinstance(item, dict):
        raise fail("expected an object")
    if unknown := sorted(set(item) - {"name", "calls", "description"}):
        raise fail(f"unknown keys {unknown}", unknown[0])
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise fail("name must be a non-empty string of letters, digits, '.', '_' or '-'", "name")
    raw = item.get("calls")
    if not isinstance(raw, list) or not raw:
        raise fail("calls must be a non-empty list of {tool, arguments}", "calls")
    calls: list[tuple[str, dict[str, Any]]] = []
    for i, c in enumerate(raw):
        if not isinstance(c, dict) or set(c) - {"tool", "arguments"} or c.get("tool") not in _TOOLS:
            raise fail(f"expected {{tool, arguments}} with tool one of {', '.join(_TOOLS)}", f"calls[{i}]")
        args = c.get("arguments", {})
        if not isinstance(args, dict):
            raise fail("arguments must be an object", f"calls[{i}].arguments")
        calls.append((c["tool"], args))
    return SearchScenario(name, tuple(calls), str(item.get("description") or ""))


def load_search_scenarios(path: str | Path) -> list[SearchScenario]:
    """Read a scenario file (``.jsonl``: one a line; otherwise a JSON list); names must be unique.

    Raises:
        DataError: naming the file, the line or scenario index, and the bad field.
    """
    from agentworld.domains.records_file import read_records

    count = iter(range(1 << 62))
    return read_records(path, lambda item, line: _parse(item, path=str(path), line=line, index=next(count)),
                        lambda s: s.name, json_list=True)


def record_rows(scenario: SearchScenario, env: Any, *, system_prompt: str,
                meta: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Run one scenario's calls in ``env`` (a fresh episode) and return its AgentWorldBench rows."""
    from agentworld.domains.search.tools import Call, format_action
    from agentworld.schema import OBSERVATION_MARKER, Trajectory, Turn

    turns = []
    for tool, arguments in scenario.calls:
        action = format_action(Call(tool, arguments))
        turns.append(Turn(action=action, observation=f"{OBSERVATION_MARKER}\n{env.step(action)}"))
    info = {"source": "real", "scenario": scenario.name, **(meta or {})}
    traj = Trajectory(id=scenario.name, domain=DOMAIN, task=DOMAIN, system_prompt=system_prompt,
                      turns=tuple(turns), meta=info)
    return [{**s.to_row(), "meta": info} for s in traj.samples()]


class RecordSearchOptions(BaseModel):
    """Run search scenarios (web_search, web_extractor, dict_memory) against a local BM25 index of HTML pages.

    The default collection is the Python documentation of the OS package python3-doc; each page's URL is
    URL_PREFIX plus its path in the folder. Nothing is fetched from the network.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    out: Path = Field(description="JSONL file of AgentWorldBench rows to write.",
                      json_schema_extra={"output": "file"})
    scenarios: Path | None = Field(None, description="Scenario file: JSONL of {name, calls: [{tool, "
                                   "arguments}]} or a JSON list of them (default: the shipped training "
                                   "scenarios).")
    docs: Path | None = Field(None, description="Folder of HTML pages to index (default: the python3-doc "
                              "HTML folder).")
    url_prefix: str = Field(PYTHON_DOCS_URL, description="URL of the docs folder: a page's URL is this "
                            "plus its path in the folder.")
    top_k: int = Field(10, ge=1, le=100, description="Results per query.")
    resume: bool = Field(False, description="Keep OUT and record only the scenarios not complete in it.",
                         json_schema_extra=cli_flags("--resume", old=("--append",)))
    overwrite: bool = Field(False, description="Replace an existing OUT.")


def _completed(out: Path, scenarios: list[SearchScenario]) -> set[str]:
    """Scenarios whose every row is in ``out``; rows of half-recorded ones are removed (atomic rewrite)."""
    from agentworld.io import atomic_write_jsonl, read_journal

    rows = [r for r in read_journal(out) if isinstance(r, dict)]
    ids = {str(r.get("id")) for r in rows}
    wanted = {s.name: {f"{s.name}-t{i}" for i in range(1, len(s.calls) + 1)} for s in scenarios}
    done = {name for name, need in wanted.items() if need <= ids}
    partial = set().union(*(need & ids for name, need in wanted.items() if name not in done))
    if partial:
        atomic_write_jsonl(out, [r for r in rows if str(r.get("id")) not in partial])
    return done


def _warn_pages(issues: tuple[PageIssue, ...], console: Any, shown: int = 10) -> None:
    """One yellow line per page left out of the index or decoded lossily (the first ``shown``), then a
    count: a bad page costs that page, and the user learns which one."""
    for issue in issues[:shown]:
        verb = "skipped" if issue.skipped else "indexed with replacement characters"
        console.print(f"[yellow]warning: page {issue.path} {verb}: {issue.reason}[/yellow]", highlight=False)
    if len(issues) > shown:
        console.print(f"[yellow]warning: … and {len(issues) - shown} more page(s) like these[/yellow]")


def run(options: RecordSearchOptions) -> None:
    """Record the scenarios into OUT (one scenario's rows at a time)."""
    from rich.console import Console

    from agentworld.domains import DOMAINS
    from agentworld.domains.search.env import open_environment, shared_index
    from agentworld.io import JsonlJournal

    out = options.out
    if options.resume and options.overwrite:
        raise AgentWorldError("--resume and --overwrite exclude each other")
    if out.exists() and out.stat().st_size and not (options.resume or options.overwrite):
        raise AgentWorldError(f"{out} exists; pass --resume to continue it or --overwrite")
    scenarios = load_search_scenarios(options.scenarios or scenarios_file("train"))
    index = shared_index(options.docs, options.url_prefix)
    _warn_pages(index.issues, Console(stderr=True))
    done = _completed(out, scenarios) if options.resume else set()
    if not options.resume and out.exists():
        out.unlink()
    prompt = DOMAINS[DOMAIN].system_prompt
    meta = {"documents": len(index.documents), "url_prefix": options.url_prefix}
    rows = 0
    with JsonlJournal(out) as journal:
        for scenario in scenarios:
            if scenario.name in done:
                continue
            env = open_environment(index=index, top_k=options.top_k)
            try:
                for row in record_rows(scenario, env, system_prompt=prompt, meta=meta):
                    journal.append(row, sync=False)
                    rows += 1
            finally:
                env.close()
        journal.sync()
    Console(stderr=True).print(f"recorded {len(scenarios) - len(done)} scenario(s), {rows} row(s) over "
                               f"{len(index.documents)} page(s) → {out}"
                               + (f"; skipped {len(done)} already recorded" if done else ""))


COMMAND = RecorderCommand(options=RecordSearchOptions, run=run)

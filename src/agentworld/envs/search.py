"""The search environment: ``web_search``, ``web_extractor`` and ``dict_memory`` over a local index.

Why: the official search prompt (Qwen-AgentWorld ``prompts/search``) defines three tools and the exact
text they answer with; a world model is scored against what real tools return. Here the tools run for
real over :class:`~agentworld.envs.search_index.SearchIndex`, and scripted scenarios become
AgentWorldBench rows in the ``search`` domain. Outputs, in the official format::

    [1] https://docs.python.org/3/library/json.html
    Title: json — JSON encoder and decoder — Python 3.11 documentation
    Snippet: ...
    Date: N/A

Result numbers run on across the queries of one batch call. ``web_extractor`` answers with the page as
Markdown-like text; a URL outside the index is an error (it is never fetched). ``dict_memory`` takes
``{"operation": add|update|retrieve|retrieve_all|remove|remove_all, "dict": {...}, "key_list": [...]}``.

Scenario file (JSON): ``[{"name": str, "calls": [{"tool": str, "arguments": {...}}, …]}]``.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentworld.domains.actions import format_tool_action
from agentworld.envs.search_index import SearchIndex, snippet
from agentworld.errors import DataError
from agentworld.schema import OBSERVATION_MARKER, Trajectory, Turn

DOMAIN = "search"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
TOOLS = ("web_search", "web_extractor", "dict_memory")
MAX_EXTRACT_CHARS = 20_000
"""Extracted page text is cut here (real extractors cap their output too)."""


class ToolError(Exception):
    """A malformed tool call: answered as an ``Error: …`` observation, as a real tool would."""


@dataclass(frozen=True)
class Call:
    tool: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class SearchScenario:
    name: str
    calls: tuple[Call, ...]
    source: str | None = None


def _dump(items: dict[str, Any]) -> str:
    return json.dumps(items, ensure_ascii=False, indent=2)


def format_action(call: Call) -> str:
    """The user-turn text of a tool call, in the form the simulator renders MCP tool calls."""
    return format_tool_action(call.tool, call.arguments)


@dataclass
class SearchTools:
    """One session's tools: a shared read-only index and this session's memory."""

    index: SearchIndex
    top_k: int = 10
    memory: dict[str, Any] = field(default_factory=dict)

    def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """The observation text (without the marker) of one tool call; bad calls answer ``Error: …``."""
        handlers = {"web_search": self.web_search, "web_extractor": self.web_extractor,
                    "dict_memory": self.dict_memory}
        try:
            if tool not in handlers:
                raise ToolError(f"unknown tool {tool!r}; available: {', '.join(TOOLS)}")
            return handlers[tool](arguments)
        except ToolError as exc:
            return f"Error: {exc}"

    def web_search(self, arguments: dict[str, Any]) -> str:
        queries = arguments.get("queries", arguments.get("query"))
        if isinstance(queries, str):
            queries = [queries]
        if not isinstance(queries, list) or not queries or not all(isinstance(q, str) for q in queries):
            raise ToolError("web_search needs 'queries' (a non-empty list of strings) or 'query' (a string)")
        blocks: list[str] = []
        number = 0
        for query in queries:
            hits = self.index.search(query, k=self.top_k)
            if not hits:
                blocks.append(f"No results found for '{query}'.")
            for hit in hits:
                number += 1
                doc = hit.document
                blocks.append(f"[{number}] {doc.url}\nTitle: {doc.title}\n"
                              f"Snippet: {snippet(doc.text, query)}\nDate: N/A")
        return "\n\n".join(blocks)

    def web_extractor(self, arguments: dict[str, Any]) -> str:
        url = arguments.get("url")
        if not isinstance(url, str) or not url:
            raise ToolError("web_extractor needs 'url' (a string)")
        doc = self.index.by_url.get(url) or self.index.by_url.get(url.split("#", 1)[0])
        if doc is None:
            raise ToolError(f"failed to fetch {url}: the page is not accessible")
        text = doc.text if doc.text.startswith("#") else f"# {doc.title}\n\n{doc.text}"
        if len(text) > MAX_EXTRACT_CHARS:
            text = text[:MAX_EXTRACT_CHARS].rsplit("\n", 1)[0] + "\n\n[... content truncated ...]"
        return text

    def dict_memory(self, arguments: dict[str, Any]) -> str:
        op = arguments.get("operation")
        if op in ("add", "update"):
            items = arguments.get("dict")
            if not isinstance(items, dict) or not items:
                raise ToolError(f"dict_memory {op} needs 'dict' (a non-empty object)")
            keys = [str(k) for k in items]
            if op == "update" and (missing := [k for k in keys if k not in self.memory]):
                raise ToolError(f"Key not found: {missing}")
            self.memory.update({str(k): v for k, v in items.items()})
            return (f"Successfully added items of {keys} to memory." if op == "add"
                    else f"Successfully updated items of {keys} in memory.")
        if op == "retrieve_all":
            return _dump(self.memory) if self.memory else "Memory is empty."
        if op == "remove_all":
            self.memory.clear()
            return "Successfully cleared all memory."
        if op in ("retrieve", "remove"):
            wanted = arguments.get("key_list")
            if not isinstance(wanted, list) or not wanted:
                raise ToolError(f"dict_memory {op} needs 'key_list' (a non-empty list of keys)")
            keys = [str(k) for k in wanted]
            missing = [k for k in keys if k not in self.memory]
            found = [k for k in keys if k in self.memory]
            if op == "remove":
                for k in found:
                    del self.memory[k]
                done = f"Successfully removed items of {found} from memory." if found else ""
            else:
                done = _dump({k: self.memory[k] for k in found}) if found else ""
            return "\n".join(p for p in (done, f"Key not found: {missing}" if missing else "") if p)
        raise ToolError("dict_memory needs 'operation': one of add, update, retrieve, retrieve_all, remove, "
                        "remove_all")


def _parse(item: Any, *, path: str, index: int) -> SearchScenario:
    name = item.get("name") if isinstance(item, dict) else None
    sample_id = name if isinstance(name, str) else None

    def fail(message: str, fld: str | None = None) -> DataError:
        return DataError(f"scenario {index}: {message}", path=path, field=fld, sample_id=sample_id)

    if not isinstance(item, dict):
        raise fail("expected an object")
    if unknown := sorted(set(item) - {"name", "calls", "description"}):
        raise fail(f"unknown keys {unknown}", unknown[0])
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise fail("name must be a non-empty string of letters, digits, '.', '_' or '-'", "name")
    raw = item.get("calls")
    if not isinstance(raw, list) or not raw:
        raise fail("calls must be a non-empty list of {tool, arguments}", "calls")
    calls: list[Call] = []
    for i, c in enumerate(raw):
        if not isinstance(c, dict) or set(c) - {"tool", "arguments"} or c.get("tool") not in TOOLS:
            raise fail(f"expected {{tool, arguments}} with tool one of {', '.join(TOOLS)}", f"calls[{i}]")
        args = c.get("arguments", {})
        if not isinstance(args, dict):
            raise fail("arguments must be an object", f"calls[{i}].arguments")
        calls.append(Call(c["tool"], args))
    return SearchScenario(name=name, calls=tuple(calls), source=path)


def load_search_scenarios(path: str | Path) -> list[SearchScenario]:
    """Read a scenario file; names must be unique.

    Raises:
        DataError: naming the file, the scenario index and the bad field.
    """
    file = Path(path)
    if not file.is_file():
        raise DataError("no such scenario file", path=str(file))
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"malformed JSON: {exc}", path=str(file)) from None
    if not isinstance(data, list) or not data:
        raise DataError("expected a non-empty JSON list of scenarios", path=str(file))
    out: list[SearchScenario] = []
    for i, item in enumerate(data):
        scenario = _parse(item, path=str(file), index=i)
        if any(s.name == scenario.name for s in out):
            raise DataError(f"scenario {i}: duplicate name", path=str(file), sample_id=scenario.name,
                            field="name")
        out.append(scenario)
    return out


def record_search(scenario: SearchScenario, index: SearchIndex, *, system_prompt: str,
                  top_k: int = 10) -> Trajectory:
    """Run one scenario's calls against fresh tools (empty memory) and return its trajectory."""
    tools = SearchTools(index, top_k=top_k)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.monotonic()
    turns: list[Turn] = []
    for call in scenario.calls:
        t_turn = time.monotonic()
        text = tools.call(call.tool, call.arguments)
        turns.append(Turn(action=format_action(call), observation=f"{OBSERVATION_MARKER}\n{text}",
                          meta={"elapsed_s": round(time.monotonic() - t_turn, 3)}))
    meta = {"source": "real", "elapsed_s": round(time.monotonic() - t0, 3), "started_at": started_at,
            "scenario": scenario.name, "documents": len(index.documents)}
    return Trajectory(id=scenario.name, domain=DOMAIN, task=DOMAIN, system_prompt=system_prompt,
                      turns=tuple(turns), meta=meta)

"""The search tools ``web_search``, ``web_extractor`` and ``dict_memory``, answering in the official format.

Why: the official search prompt (Qwen-AgentWorld ``prompts/search``) defines three tools and the exact
text they answer with; a world model is scored against what real tools return. Here the tools run for
real over :class:`~agentworld.envs.search_index.SearchIndex` (domain-free BM25 machinery)::

    [1] https://docs.python.org/3/library/json.html
    Title: json — JSON encoder and decoder — Python 3.11.2 documentation
    Snippet: ...
    Date: N/A

Result numbers run on across the queries of one batch call. ``web_extractor`` answers with the page as
Markdown-like text, or, given a ``goal``, with the page's sections that answer it; a URL outside the
index is an error (it is never fetched). ``dict_memory`` takes ``{"operation": add|update|retrieve|
retrieve_all|remove|remove_all, "dict": {...}, "key_list": [...]}``; its memory lives in one episode.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agentworld.domains.actions import format_tool_action, tool_call
from agentworld.envs.search_index import SearchIndex, relevant_sections, snippet

TOOLS = ("web_search", "web_extractor", "dict_memory")
MEMORY_WRITES = frozenset({"add", "update", "remove", "remove_all"})
"""dict_memory operations that change the episode's memory."""
MAX_EXTRACT_CHARS = 8_000
"""A whole extracted page is cut here (real extractors cap their output too)."""
GOAL_EXTRACT_CHARS = 2_000
"""What an extraction with a goal returns at most: the evidence, not the page."""


class ToolError(Exception):
    """A malformed tool call: answered as an ``Error: …`` observation, as a real tool would."""


@dataclass(frozen=True)
class Call:
    tool: str
    arguments: dict[str, Any]


def format_action(call: Call) -> str:
    """The user-turn text of a tool call, in the form the simulator renders tool calls."""
    return format_tool_action(call.tool, call.arguments)


def parse_action(action: str) -> Call:
    """The tool call in an action text (the row's action), or :class:`ToolError` saying what is wrong."""
    found = tool_call(action)
    if found is None:
        raise ToolError('expected a JSON tool call {"tool_name": ..., "arguments": {...}}')
    return Call(*found)


def memory_write_message(tool: str, arguments: dict[str, Any]) -> str | None:
    """What a ``dict_memory`` write answers when it succeeds — a function of the call alone — or None
    (not a memory write, or malformed)."""
    if tool != "dict_memory":
        return None
    op, items, keys = arguments.get("operation"), arguments.get("dict"), arguments.get("key_list")
    if op == "remove_all":
        return "Successfully cleared all memory."
    if op in ("add", "update") and isinstance(items, dict) and items:
        names = [str(k) for k in items]
        return (f"Successfully added items of {names} to memory." if op == "add"
                else f"Successfully updated items of {names} in memory.")
    if op == "remove" and isinstance(keys, list) and keys:
        return f"Successfully removed items of {[str(k) for k in keys]} from memory."
    return None


def _dump(items: dict[str, Any]) -> str:
    return json.dumps(items, ensure_ascii=False, indent=2)


@dataclass
class SearchTools:
    """One episode's tools: a shared read-only index and this episode's memory."""

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
        url, goal = arguments.get("url"), arguments.get("goal")
        if not isinstance(url, str) or not url:
            raise ToolError("web_extractor needs 'url' (a string)")
        if goal is not None and not isinstance(goal, str):
            raise ToolError("web_extractor 'goal' must be a string")
        doc = self.index.by_url.get(url) or self.index.by_url.get(url.split("#", 1)[0])
        if doc is None:
            raise ToolError(f"failed to fetch {url}: the page is not accessible")
        text = doc.text if doc.text.startswith("#") else f"# {doc.title}\n\n{doc.text}"
        if goal:
            heading = text.split("\n", 1)[0]
            parts = relevant_sections(text, goal, GOAL_EXTRACT_CHARS)
            if not parts:
                parts = relevant_sections(text, heading, GOAL_EXTRACT_CHARS)[:1]
            if not parts or parts[0].split("\n", 1)[0] != heading:
                parts.insert(0, heading)
            return "\n\n".join(parts)
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

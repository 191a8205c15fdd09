"""Sim-to-real routing of MCP tool calls: which run on a real server here, which the model imagines.

Why: a real server answers exactly and for free, but only the servers this package records
(:mod:`agentworld.domains.mcp.servers`) run here, and only inside their sandbox folder. So a call
to one of their tools runs for real; a call the model must imagine (an unknown tool, one marked
``openWorldHint``: it reaches outside) stays with the model, and it *may change the world* unless
the tool is read-only, after which the router keeps every later step with the model. Read-only is
what the server says (``readOnlyHint``); for a tool without annotations, its name (get/list/read/…).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agentworld.domains.actions import tool_call
from agentworld.domains.base import RouteDecision
from agentworld.inputs import jsonl_rows

READ_VERBS = frozenset((
    "get", "list", "read", "search", "find", "describe", "show", "view", "fetch", "query", "lookup", "open",
    "status", "diff", "log", "count", "check", "inspect", "info", "convert", "directory"))
"""First words of tool names that read without writing, when the server gives no ``readOnlyHint``."""
_WORD = re.compile(r"[A-Za-z][a-z]*|[A-Z]+(?![a-z])")


def reads_by_name(name: str) -> bool:
    """Whether a tool's name says it only reads (``git_log``, ``getUser``, ``list_directory``)."""
    words = [w.lower() for w in _WORD.findall(name)]
    if words and words[0] in ("git", "fs", "db", "mcp") and len(words) > 1:
        words = words[1:]
    return bool(words) and words[0] in READ_VERBS


def read_only(tool: Mapping[str, Any] | None, name: str) -> bool:
    """A tool's ``readOnlyHint`` when it has one, else :func:`reads_by_name`."""
    hints = (tool or {}).get("annotations") or {}
    hint = hints.get("readOnlyHint")
    return hint if isinstance(hint, bool) else reads_by_name(name)


@functools.lru_cache(maxsize=1)
def _catalogue() -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Tools of the servers that run here as they listed themselves in the shipped corpus, and the
    server preset offering each."""
    from agentworld.domains.base import plugin

    mcp = plugin("mcp")
    path = mcp.data_file(mcp.corpus) if mcp is not None else None
    tools: dict[str, dict[str, Any]] = {}
    servers: dict[str, str] = {}
    if path is None:
        return tools, servers
    seen: set[tuple[str, str]] = set()
    for _, row in jsonl_rows(path.read_text(encoding="utf-8"), path=path):
        server, prompt = str((row.get("meta") or {}).get("server", "")), row.get("system_str", "")
        if (server, prompt) in seen:
            continue
        seen.add((server, prompt))
        _, marker, listing = prompt.partition("# Available tools\n")
        for tool in json.loads(listing).get("tools", []) if marker else []:
            tools.setdefault(str(tool.get("name")), tool)
            if server:
                servers.setdefault(str(tool.get("name")), server)
    return tools, servers


def known_tools() -> dict[str, dict[str, Any]]:
    """The tools of the servers that run here, as they listed themselves in the shipped corpus."""
    return _catalogue()[0]


def tool_servers() -> dict[str, str]:
    """Tool name → the server preset (git, time, filesystem, memory) that offers it."""
    return _catalogue()[1]


def decide(action: str | Mapping[str, Any], tools: Sequence[Mapping[str, Any]] | None = None, *,
           prefer: str = "fidelity") -> RouteDecision:
    """Route one MCP action; ``tools``: the real server's tool list (default: :func:`known_tools`).

    ``prefer`` is accepted for the router's contract; every call to these local servers is cheap.
    """
    del prefer
    call = tool_call(action if isinstance(action, str) else json.dumps(action, ensure_ascii=False))
    if call is None:
        return RouteDecision("model", "not a JSON tool call", side_effects=False)
    name, _ = call
    table = {str(t.get("name")): dict(t) for t in tools} if tools is not None else known_tools()
    tool = table.get(name)
    reads = read_only(tool, name)
    if tool is None:
        return RouteDecision("model", f"no real server here offers {name!r}", side_effects=not reads)
    if ((tool.get("annotations") or {}).get("openWorldHint")) is True:
        return RouteDecision("model", f"{name} reaches outside the sandbox (openWorldHint)",
                             side_effects=not reads)
    if reads:
        return RouteDecision("real", f"{name} only reads", side_effects=False)
    return RouteDecision("real", f"{name} writes inside the real server's sandbox folder")

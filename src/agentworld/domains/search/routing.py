"""Sim-to-real routing for search: every tool runs on a local, read-only index, so every step may be real.

What matters is the other direction: a ``dict_memory`` write the *model* answered is missing from the real
memory, so a later real ``retrieve`` would contradict the episode; such steps carry ``side_effects`` and
keep the rest of the episode with the model. Searches, page reads and memory reads change nothing.
"""

from __future__ import annotations

from agentworld.domains.base import RouteDecision
from agentworld.domains.search.tools import MEMORY_WRITES, TOOLS, ToolError, parse_action


def decide(action: str) -> RouteDecision:
    """Route one row action (``**Action:**`` + JSON tool call)."""
    try:
        call = parse_action(action)
    except ToolError:
        return RouteDecision("real", "not a tool call: the real tools answer with an error",
                             side_effects=False)
    if call.tool not in TOOLS:
        return RouteDecision("real", f"unknown tool {call.tool}: the real tools answer with an error",
                             side_effects=False)
    if call.tool == "dict_memory":
        op = call.arguments.get("operation")
        if op in MEMORY_WRITES:
            return RouteDecision("real", f"dict_memory {op} writes episode memory (local)", side_effects=True)
        return RouteDecision("real", f"dict_memory {op} reads episode memory", side_effects=False)
    what = "searches" if call.tool == "web_search" else "reads a page of"
    return RouteDecision("real", f"{call.tool} {what} the local index (read-only)", side_effects=False)

"""Search actions: one JSON tool call (``web_search``, ``web_extractor``, ``dict_memory``), rendered as the
recorder writes it (``**Action:**`` + a fenced ``{"tool_name", "arguments"}``).

Why: a call reaches the world model (and retrieval) in the form of the recorded rows whatever form the
caller gave — a dict, bare JSON, or the row text itself. Text that holds no tool call is kept as free
text (a plain query typed into the shell).
"""

from __future__ import annotations

import json
from typing import Any

from agentworld.domains.actions import format_json_action, tool_call
from agentworld.domains.hooks import DomainActions, ParsedAction, RawAction, tool_call_agent_action
from agentworld.domains.spec import WorldSpec

SHAPE = '{"tool_name": "web_search", "arguments": {"query": "..."}}'
AGENT_HELP = ("Call one tool per turn with a JSON object {\"tool_name\": ..., \"arguments\": {...}}:\n"
              "- web_search: {\"query\": str} or {\"queries\": [str, ...]}\n"
              "- web_extractor: {\"url\": str, \"goal\": str (optional)}\n"
              "- dict_memory: {\"operation\": add|update|retrieve|retrieve_all|remove|remove_all, "
              "\"dict\": {...}, \"key_list\": [...]}")


class SearchActions(DomainActions):
    shape = SHAPE

    def parse(self, action: RawAction) -> ParsedAction:
        """A tool call in any of its forms; other text stays free text (a plain query), as before."""
        found = tool_call(action if isinstance(action, str) else json.dumps(action, ensure_ascii=False))
        if found is None:
            return super().parse(action)
        name, args = found
        key = f"{name} {json.dumps(args, sort_keys=True, ensure_ascii=False)}"
        return ParsedAction(payload={"tool_name": name, "arguments": args}, key=key, tool=name,
                            arguments=args)

    def render(self, parsed: ParsedAction, initial: str | None = None) -> str:
        return format_json_action(parsed.payload) if isinstance(parsed.payload, dict) else str(parsed.payload)

    def initial_observation(self, spec: WorldSpec, seed: int) -> str:
        """Empty: no results seen, no memory (the official prompt's initial state)."""
        return spec.initial_state

    def from_line(self, line: str) -> Any:
        if not line.strip():
            return None
        if tool_call(line) is None:
            raise ValueError(f"type a JSON tool call, e.g. {SHAPE}")
        return line

    def agent_action(self, value: Any) -> Any:
        return tool_call_agent_action(value)

    def agent_help(self, spec: WorldSpec) -> str:
        return AGENT_HELP


ACTIONS = SearchActions()

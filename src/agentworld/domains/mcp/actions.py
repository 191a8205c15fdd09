"""MCP actions: one JSON tool call ``{"tool_name", "arguments"}``; the tools come from the world spec."""

from __future__ import annotations

import json
from typing import Any

from agentworld.domains.actions import format_json_action
from agentworld.domains.hooks import (
    ActionError,
    DomainActions,
    ParsedAction,
    RawAction,
    json_action,
    tool_call_agent_action,
)
from agentworld.domains.spec import WorldSpec

SHAPE = '{"tool_name": "...", "arguments": {...}}'
AGENT_HELP = ("Call one tool per turn with a JSON object: "
              '{{"tool_name": "<name>", "arguments": {{...}}}}.\nTools:\n{tools}')


class McpActions(DomainActions):
    shape = SHAPE

    def parse(self, action: RawAction) -> ParsedAction:
        data = json_action(action, "mcp", SHAPE)
        if not isinstance(data, dict):
            raise ActionError(f"mcp action must be one JSON object {SHAPE}, got {type(data).__name__}")
        name = data.get("tool_name", data.get("name"))
        if not isinstance(name, str) or not name:
            raise ActionError("mcp action: missing string field 'tool_name'")
        args = data.get("arguments", {})
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise ActionError(f"mcp action: 'arguments' must be an object, got {type(args).__name__}")
        key = f"{name} {json.dumps(args, sort_keys=True, ensure_ascii=False)}"
        return ParsedAction(payload={"tool_name": name, "arguments": args}, key=key, tool=name,
                            arguments=args)

    def render(self, parsed: ParsedAction, initial: str | None = None) -> str:
        return format_json_action(parsed.payload)

    def initial_observation(self, spec: WorldSpec, seed: int) -> str:
        """The server's tool list, one line per tool."""
        title = f"MCP server {spec.name!r}" if spec.name else "MCP server"
        lines = []
        for tool in spec.tools:
            desc = str(tool.get("description") or "").strip().splitlines()
            lines.append(f"- {tool.get('name')}" + (f": {desc[0]}" if desc else ""))
        if not lines:
            return f"{title} ready. No tools listed."
        return f"{title} ready. {len(lines)} tools available:\n" + "\n".join(lines)

    def prompt_sections(self, spec: WorldSpec) -> list[str]:
        if not spec.tools:
            return []
        return ["# Available tools\n" + json.dumps({"tools": spec.tools}, indent=2, ensure_ascii=False)]

    def from_line(self, line: str) -> Any:
        if not line.strip():
            return None
        try:
            return json.loads(line)
        except ValueError as exc:
            example = '{"tool_name": "…", "arguments": {}}'
            raise ValueError(f"type a JSON tool call, e.g. {example} ({exc})") from None

    def agent_action(self, value: Any) -> Any:
        return tool_call_agent_action(value)

    def agent_help(self, spec: WorldSpec) -> str:
        tools = "\n".join(f"- {t.get('name')}: {t.get('description', '')} "
                          f"input schema {json.dumps(t.get('inputSchema') or {})}" for t in spec.tools)
        return AGENT_HELP.format(tools=tools)


ACTIONS = McpActions()

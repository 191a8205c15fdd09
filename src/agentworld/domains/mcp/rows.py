"""How the recording proxy's calls read as rows of the mcp domain (the proxy itself is domain-free)."""

from __future__ import annotations

import json
from typing import Any

from agentworld.domains.actions import format_tool_action
from agentworld.envs.mcp_proxy import RowLayout

DOMAIN = "mcp"


def system_prompt(tools: list[Any] | None) -> str:
    """The mcp domain system prompt plus the server's tool list, as the simulator builds it."""
    from agentworld.domains import DOMAINS

    parts = [DOMAINS[DOMAIN].system_prompt.rstrip()]
    if tools:
        parts.append("# Available tools\n" + json.dumps({"tools": tools}, indent=2, ensure_ascii=False))
    return "\n\n".join(parts)


ROWS = RowLayout(task=DOMAIN, action=format_tool_action, system_prompt=system_prompt)
"""How the proxy's recorded calls read as rows of the mcp domain."""

"""The MCP domain: tool calls to a Model Context Protocol server and their JSON results.

Real: the recording proxy (``agentworld record mcp``) between a client and a real server, and rules
that compare results field by field.
"""

from agentworld.domains.base import DomainPlugin

PLUGIN = DomainPlugin(
    name="mcp",
    display="MCP",
    rules="agentworld.domains.mcp.rules:RULES",
    recorder="agentworld.domains.mcp.record:COMMAND",
    actions="agentworld.domains.mcp.actions:ACTIONS",
    ledger="agentworld.domains.mcp.ledger:open_ledger",
    error_patterns=(r"^\s*(?i:error)\b",),
)

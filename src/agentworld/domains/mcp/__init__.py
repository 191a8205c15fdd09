"""The MCP domain: tool calls to a Model Context Protocol server."""

from agentworld.domains.base import DomainPlugin

PLUGIN = DomainPlugin(
    name="mcp",
    display="MCP",
    actions="agentworld.domains.mcp.actions:ACTIONS",
    ledger="agentworld.domains.mcp.ledger:open_ledger",
)

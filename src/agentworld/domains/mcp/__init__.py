"""The MCP domain: tool calls to Model Context Protocol servers, and real servers to record and route to.

Light on purpose (read by the registry at start-up): every heavy part is a reference resolved on use.
"""

from agentworld.domains.base import DomainPlugin

PLUGIN = DomainPlugin(
    name="mcp",
    display="MCP",
    environment="agentworld.domains.mcp.env:open_environment",
    routing="agentworld.domains.mcp.routing:decide",
    recorder="agentworld.domains.mcp.record:COMMAND",
    corpus="corpus.jsonl",
    heldout_scenarios="scenarios/heldout.jsonl",
)

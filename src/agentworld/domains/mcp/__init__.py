"""The MCP domain: tool calls to Model Context Protocol servers and their results.

Real: the recording proxy (``agentworld record mcp``) between a client and a real server, scenarios
recorded through it against real servers (git, time, filesystem, memory), a real server session
for sim-to-real routing, and rules that compare results field by field. Light on purpose (read by
the registry at start-up): every heavy part is a reference resolved on use.
"""

from agentworld.domains.base import DomainPlugin
from agentworld.domains.error_patterns import COMMON_ERRORS, MCP_ERRORS

PLUGIN = DomainPlugin(
    name="mcp",
    display="MCP",
    rules="agentworld.domains.mcp.rules:RULES",
    environment="agentworld.domains.mcp.env:open_environment",
    routing="agentworld.domains.mcp.routing:decide",
    recorder="agentworld.domains.mcp.record:COMMAND",
    corpus="corpus.jsonl",
    heldout_scenarios="scenarios/heldout.jsonl",
    actions="agentworld.domains.mcp.actions:ACTIONS",
    ledger="agentworld.domains.mcp.ledger:open_ledger",
    error_patterns=(*COMMON_ERRORS, r"^\s*(?i:error)\b", *MCP_ERRORS),
    probes="agentworld.domains.mcp.probes:generate",
    extra={"vocabulary": "agentworld.domains.mcp.vocabulary:VOCABULARY"},
)

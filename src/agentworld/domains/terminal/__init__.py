"""The terminal domain: a bash session driven by Terminal-Bench keystroke actions, real in a sandbox."""

from agentworld.domains.base import DomainPlugin

PLUGIN = DomainPlugin(
    name="terminal",
    display="Terminal",
    environment="agentworld.domains.terminal.env:open_environment",
    routing="agentworld.domains.terminal.routing:decide",
    actions="agentworld.domains.terminal.actions:ACTIONS",
    ledger="agentworld.domains.terminal.ledger:open_ledger",
    faults="agentworld.domains.terminal.faults:render_fault",
)

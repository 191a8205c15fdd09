"""The terminal domain: a bash session in a sandbox, driven by Terminal-Bench keystroke batches.

Real: recorder (``agentworld record terminal``), shipped corpus, rules, retrieval keys, routing.
"""

from agentworld.domains.base import DomainPlugin
from agentworld.domains.error_patterns import COMMON_ERRORS, SHELL_ERRORS

PLUGIN = DomainPlugin(
    name="terminal",
    display="Terminal",
    action_word="command",
    effect="The shell echoes the command, prints its output and a new prompt.",
    rules="agentworld.domains.terminal.rules:RULES",
    retrieval_keys="agentworld.domains.terminal.retrieval:KEYS",
    recorder="agentworld.domains.terminal.record_cli:COMMAND",
    corpus="corpus.jsonl",
    heldout_scenarios="heldout.json",
    environment="agentworld.domains.terminal.env:open_environment",
    routing="agentworld.domains.terminal.routing:decide",
    actions="agentworld.domains.terminal.actions:ACTIONS",
    ledger="agentworld.domains.terminal.ledger:open_ledger",
    faults="agentworld.domains.terminal.faults:render_fault",
    error_patterns=COMMON_ERRORS + SHELL_ERRORS,
    prediction_tasks="agentworld.domains.terminal.prediction_tasks:heldout_tasks",
    plan_tasks="agentworld.domains.terminal.futile:SUITE",
    probes="agentworld.domains.terminal.probes:generate",
    extra={"vocabulary": "agentworld.domains.terminal.vocabulary:VOCABULARY"},
)

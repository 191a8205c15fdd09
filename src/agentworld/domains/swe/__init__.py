"""The SWE domain: a coding agent's tools (shell, file view and edit, search, todos) on a repository.

Real: vendored sdists of small Python projects unpacked into a sandboxed workspace, tools run inside
the sandbox (:mod:`agentworld.envs.workspace`), recorded with ``agentworld record swe``.
"""

from agentworld.domains.base import DomainPlugin
from agentworld.domains.error_patterns import TOOL_SHELL_ERRORS

PLUGIN = DomainPlugin(
    name="swe",
    display="SWE",
    action_word="command",
    rules="agentworld.domains.swe.rules:RULES",
    environment="agentworld.domains.swe.env:open_environment",
    routing="agentworld.domains.swe.routing:decide",
    recorder="agentworld.domains.swe.record:COMMAND",
    corpus="corpus.jsonl",
    heldout_scenarios="scenarios/heldout.jsonl",
    error_patterns=TOOL_SHELL_ERRORS,
    probes="agentworld.domains.swe.probes:generate",
    extra={"vocabulary": "agentworld.domains.swe.vocabulary:VOCABULARY"},
)

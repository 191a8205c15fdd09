"""Sim-to-real routing of SWE tool calls: which may run in the real workspace, which the model imagines.

Reads (``read_file``, ``list_directory``, ``glob``, ``search_file_content``) and the todo list run for
real and change nothing a later step could miss. Writes (``write_file``, ``replace``) run for real
too — the workspace is a private copy — but are marked as changing the world, so that if a policy
sends one to the model, later steps stay with the model. Shell commands follow the terminal's command
rules (network, privileges and missing programs go to the model; a ``pip install`` imagined by the
model changes the world, a ``ping`` does not). Tools the workspace does not have go to the model.
"""

from __future__ import annotations

from typing import Any, Literal

from agentworld.domains.actions import tool_call
from agentworld.domains.base import RouteDecision

READS = frozenset({"read_file", "list_directory", "glob", "search_file_content"})
WRITES = frozenset({"write_file", "replace"})
ELSEWHERE_READ_ONLY = frozenset({"web_fetch", "google_web_search", "web_search", "read_many_files"})
"""Tools of coding agents that the workspace lacks but that change nothing in it."""


def _classify_script(command: str, strict: bool) -> RouteDecision:
    """The terminal's rules for a command line (lazy: the terminal package is only needed for shell calls)."""
    from agentworld.domains.terminal.routing import classify_script

    decision: Any = classify_script(command, strict=strict)
    return RouteDecision(decision.route, decision.reason, decision.side_effects)


def decide(action: str, *, prefer: Literal["fidelity", "cost"] = "fidelity") -> RouteDecision:
    """Route one SWE action text (a tool call); see the module docstring for the rules.

    With ``prefer="cost"`` a shell command runs for real only when every program in it is a
    well-known cheap one (the terminal's ``prefer="cost"``).
    """
    call = tool_call(action)
    if call is None:
        return RouteDecision("model", "not a tool call", side_effects=False)
    name, args = call
    if name in READS:
        return RouteDecision("real", f"{name} only reads the workspace", side_effects=False)
    if name == "todo_write":
        return RouteDecision("real", "the todo list is session state the workspace keeps", side_effects=False)
    if name in WRITES:
        return RouteDecision("real", f"{name} writes inside the private workspace", side_effects=True)
    if name == "run_shell_command":
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return RouteDecision("real", "an empty command is refused by the tool itself", side_effects=False)
        if args.get("is_background") is True:
            return RouteDecision("model", "background processes do not outlive a call in the workspace")
        return _classify_script(command, strict=prefer == "cost")
    if name in ELSEWHERE_READ_ONLY:
        return RouteDecision("model", f"{name} is not a workspace tool", side_effects=False)
    return RouteDecision("model", f"{name} is not a workspace tool")

"""What the simulator, the shell and the rollout agent ask a domain about its actions.

Why one object per domain: reading an action (terminal keystrokes, an MCP tool call, free text),
rendering it as the user turn, the first observation, the shell's typed line and the action shape
a rollout agent must answer with all follow from one format, so a domain package implements them
together (``DomainPlugin.actions``) and the simulator never branches on a domain's name.
:class:`DomainActions` is the behaviour of a free-text domain; a domain overrides what differs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentworld.domains.base import DomainPlugin, plugin_of, resolve
from agentworld.domains.spec import InjectedFault, WorldSpec
from agentworld.errors import AgentWorldError

RawAction = str | dict[str, Any] | list[Any]
"""An action as a caller hands it over: its text, or the JSON value of a structured action."""


class ActionError(AgentWorldError):
    """An action the simulator cannot read (wrong shape for the domain); the message says why."""


@dataclass(frozen=True)
class ParsedAction:
    """One action, read and rendered.

    Attributes:
        payload: the normalised action (terminal: keystroke list; MCP: ``{"tool_name", "arguments"}``;
            other domains: text).
        key: identity of the call, independent of the turn (for stale replays and pagination).
        tool: what fault filters match (MCP tool name; terminal: first word of the command).
        command: terminal keystrokes joined (for fault templates); ``None`` elsewhere.
        arguments: a tool call's arguments (validated against the tool's schema); ``None`` elsewhere.
    """

    payload: Any
    key: str
    tool: str | None = None
    command: str | None = None
    arguments: dict[str, Any] | None = None


def json_action(action: RawAction, what: str, shape: str) -> Any:
    """The JSON value of an action given as text (a ```json fence allowed), or as the value itself."""
    if not isinstance(action, str):
        return action
    text = action.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ActionError(f"malformed {what} action: not valid JSON ({exc}); expected {shape}") from None


class DomainActions:
    """A domain's action format; this base class is a free-text domain (android, os, web …).

    Attributes:
        shape: an example of one action, quoted in errors.
        initial_in_action: the first action's text carries the initial observation (the terminal's
            ``**Current State:**``), so the system prompt states it only once that turn has left the
            history window.
    """

    shape = "text"
    initial_in_action = False

    def parse(self, action: RawAction) -> ParsedAction:
        """Read an action in the domain's form, or raise :class:`ActionError` naming the problem."""
        text = action if isinstance(action, str) else json.dumps(action, ensure_ascii=False)
        return ParsedAction(payload=text, key=" ".join(text.split()))

    def render(self, parsed: ParsedAction, initial: str | None = None) -> str:
        """The user message (the row's action text); ``initial`` is given on the first turn only when
        :attr:`initial_in_action`."""
        return str(parsed.payload)

    def initial_observation(self, spec: WorldSpec, seed: int) -> str:
        """What ``reset`` shows."""
        return spec.initial_state

    def prompt_sections(self, spec: WorldSpec) -> list[str]:
        """Sections the domain's default system prompt gets from the spec (MCP: its tool list)."""
        return []

    def from_line(self, line: str) -> Any:
        """The action for one line a person typed into ``agentworld shell`` (None: nothing to do).

        Raises:
            ValueError: the line is not an action of this domain (the message shows the form).
        """
        return line

    def is_prompt_line(self, line: str) -> bool:
        """Whether a screen's last line is an input prompt the shell should show as its own prompt."""
        return False

    def agent_action(self, value: Any) -> Any:
        """A JSON value from a rollout agent's reply as this domain's action, or None if it is not one."""
        return value if isinstance(value, dict | list) else None

    def agent_help(self, spec: WorldSpec) -> str:
        """How a rollout agent is told to act (the action format, for MCP the tools)."""
        return "Act with one JSON value in the environment's action format."


def tool_call_agent_action(value: Any) -> Any:
    """A rollout agent's JSON as a tool call (``tool_name``/``name`` and ``arguments``), or None:
    :meth:`DomainActions.agent_action` of the tool-call domains."""
    name = value.get("tool_name", value.get("name")) if isinstance(value, dict) else None
    if isinstance(value, dict) and isinstance(name, str):
        return {"tool_name": name, "arguments": value.get("arguments") or {}}
    return None


TEXT_ACTIONS = DomainActions()
"""The action format of a domain whose plugin names none."""


def domain_actions(domain: str | DomainPlugin) -> DomainActions:
    """The action format of ``domain`` (its plugin's ``actions``; free text when it has none)."""
    found = plugin_of(domain)
    if found.actions is None:
        return TEXT_ACTIONS
    actions: DomainActions = resolve(found.actions)
    return actions


def generic_fault(fault: InjectedFault, tool: str | None = None) -> str:
    """An injected error fault as a JSON-RPC-like error text (domains without their own template)."""
    d = fault.detail
    return {
        "timeout": f"Error: request timed out after {d.get('timeout_s', 30)}s",
        "server_error": f"Error: {d.get('status', 503)} {d.get('reason', 'Service Unavailable')} "
                        "(the server is temporarily unable to handle the request)",
        "rate_limit": f"Error: 429 Too Many Requests (retry after {d.get('retry_after_s', 2)}s)",
        "permission_denied": f"Error: permission denied for tool {tool}" if tool else
                             "Error: permission denied",
    }[fault.kind]


def fault_template(domain: str | DomainPlugin, fault: InjectedFault, parsed: ParsedAction,
                   screens: Sequence[str]) -> str:
    """An error fault rendered without a model: the domain's template (``DomainPlugin.faults``) or generic."""
    found = plugin_of(domain)
    if found.faults is None:
        return generic_fault(fault, parsed.tool)
    text: str = resolve(found.faults)(fault, parsed, screens)
    return text


__all__ = ["TEXT_ACTIONS", "ActionError", "DomainActions", "ParsedAction", "RawAction", "domain_actions",
           "fault_template", "generic_fault", "json_action"]

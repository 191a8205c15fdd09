"""Reading action and observation text: terminal keystroke lists, MCP tool calls, shell prompts.

Shared by the recorder (which writes these texts), the retrieval world model and the rule tier
(which read them), so all three agree on one format — the one of the official few-shot examples:
a user turn is ``[**Current State:**\n<screen>\n\n]**Action:**\n```json\n[…]\n```.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

PROMPT_RE = re.compile(r"^(?P<user>[A-Za-z_][\w.-]*)@(?P<host>[\w.-]+):(?P<cwd>[^\s#$]*)"
                       r"(?P<sigil>[#$])(?: (?P<cmd>.*))?$")
"""A container-style shell prompt line, ``root@ad092d3df69c:/app# ls`` (command optional)."""

_ACTION_RE = re.compile(r"\*\*Action:\*\*\s*(?:```(?:json)?\s*(?P<fenced>.*?)```|(?P<bare>.*))", re.S)
_STATE_RE = re.compile(r"\*\*Current State:\*\*\s*\n(?P<state>.*?)(?=\n\s*\*\*Action:\*\*|\Z)", re.S)



def format_json_action(payload: Any) -> str:
    """A JSON action as the user turn carries it (MCP and search tool calls)."""
    return f"**Action:**\n```json\n{json.dumps(payload, ensure_ascii=False)}\n```"


def format_tool_action(tool_name: str, arguments: Any) -> str:
    """The action text of a tool call, exactly as the simulator renders MCP actions."""
    args = arguments if arguments is not None else {}
    return format_json_action({"tool_name": tool_name, "arguments": args})


def format_terminal_action(steps: Sequence[dict[str, Any]], initial_screen: str | None = None) -> str:
    """The user-turn text of one terminal action (``initial_screen`` only on the first turn)."""
    body = json.dumps(list(steps), indent=2, ensure_ascii=False)
    head = f"**Current State:**\n{initial_screen}\n\n" if initial_screen is not None else ""
    return f"{head}**Action:**\n```json\n{body}\n```"


def terminal_keystrokes(action: str) -> str | None:
    """The keystrokes of a terminal action joined into one string, or None if it is not one."""
    m = _ACTION_RE.search(action)
    if not m:
        return None
    try:
        steps = json.loads(m.group("fenced") or m.group("bare") or "")
    except ValueError:
        return None
    if isinstance(steps, dict):
        steps = [steps]
    if not isinstance(steps, list) or not all(isinstance(s, dict) and "keystrokes" in s for s in steps):
        return None
    return "".join(str(s.get("keystrokes") or "") for s in steps)


def terminal_state(action: str) -> str | None:
    """The ``**Current State:**`` screen of a first terminal turn, if present."""
    m = _STATE_RE.search(action)
    return m.group("state").rstrip() if m else None


def tool_call(action: str) -> tuple[str, dict[str, Any]] | None:
    """``(tool name, arguments)`` of an MCP-style JSON tool call anywhere in the action text."""
    start = action.find("{")
    while start != -1:
        try:
            obj, _ = json.JSONDecoder().raw_decode(action[start:])
        except ValueError:
            start = action.find("{", start + 1)
            continue
        if isinstance(obj, dict):
            name = obj.get("tool_name") or obj.get("name")
            args = obj.get("arguments", obj.get("args", {}))
            if isinstance(name, str) and isinstance(args, dict):
                return name, args
        start = action.find("{", start + 1)
    return None




def last_prompt(screen: str) -> re.Match[str] | None:
    """The last prompt line of a screen (where the next command will be typed)."""
    for line in reversed(screen.splitlines()):
        m = PROMPT_RE.match(line.rstrip())
        if m:
            return m
    return None


def detect_domain(action: str) -> str | None:
    if terminal_keystrokes(action) is not None:
        return "terminal"
    if tool_call(action) is not None:
        return "mcp"
    return None


def normalise_action(action: str, domain: str | None = None) -> str:
    """Terminal: the keystrokes; MCP: ``tool k=v …`` with sorted args; otherwise collapsed text."""
    if domain in (None, "terminal"):
        keys = terminal_keystrokes(action)
        if keys is not None:
            return " ".join(keys.split())
    call = tool_call(action)
    if call is not None:
        name, args = call
        return " ".join([name] + [f"{k}={json.dumps(args[k], sort_keys=True)}" for k in sorted(args)])
    return " ".join(action.split())

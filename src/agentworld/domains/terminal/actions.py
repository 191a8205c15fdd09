"""Terminal actions: Terminal-Bench keystroke lists, rendered as in the official few-shot examples.

The first user turn carries the first screen (``**Current State:**``), so the system prompt states
the initial state only once that turn has left the history window.
"""

from __future__ import annotations

import hashlib
from typing import Any

from agentworld.domains.actions import PROMPT_RE, format_terminal_action
from agentworld.domains.hooks import ActionError, DomainActions, ParsedAction, RawAction, json_action
from agentworld.domains.spec import WorldSpec

SHAPE = '[{"keystrokes": "ls\\n", "duration": 0.5}, ...]'
AGENT_HELP = ('Type into the terminal with a JSON object {"keystrokes": "ls -la\\n"} '
              "(end commands with \\n) or a list of such objects.")


def _container_id(seed: int) -> str:
    """The sandbox's hostname for ``seed``, so a real sandbox and the model agree on the prompt."""
    try:
        from agentworld.envs.sandbox import container_id
    except ImportError:
        return hashlib.sha256(f"agentworld-sandbox:{seed}".encode()).hexdigest()[:12]
    return container_id(seed)


def _is_keystrokes(value: Any) -> bool:
    if isinstance(value, dict):
        return "keystrokes" in value
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) and "keystrokes" in v
                                                           for v in value)


class TerminalActions(DomainActions):
    shape = SHAPE
    initial_in_action = True

    def parse(self, action: RawAction) -> ParsedAction:
        data = json_action(action, "terminal", SHAPE)
        if isinstance(data, dict):
            data = [data]
        if not isinstance(data, list) or not data:
            raise ActionError(f"terminal action must be a non-empty list of keystroke batches, e.g. {SHAPE}")
        steps: list[dict[str, Any]] = []
        for i, item in enumerate(data):
            if not isinstance(item, dict) or not isinstance(item.get("keystrokes"), str):
                raise ActionError(f"terminal action item {i}: expected an object with a string 'keystrokes'")
            duration = item.get("duration", 1.0)
            if isinstance(duration, bool) or not isinstance(duration, int | float) or duration < 0:
                raise ActionError(f"terminal action item {i}: 'duration' must be a number >= 0, "
                                  f"got {duration!r}")
            steps.append({**item, "keystrokes": item["keystrokes"], "duration": duration})
        command = "".join(s["keystrokes"] for s in steps)
        words = command.strip().split()
        return ParsedAction(payload=steps, key=" ".join(words), tool=words[0] if words else None,
                            command=command)

    def render(self, parsed: ParsedAction, initial: str | None = None) -> str:
        return format_terminal_action(parsed.payload, initial)

    def initial_observation(self, spec: WorldSpec, seed: int) -> str:
        return spec.initial_state or f"root@{_container_id(seed)}:/app#"

    def from_line(self, line: str) -> Any:
        if line.strip() == "^C":
            return [{"keystrokes": "C-c", "duration": 0.5}]
        if line.strip().startswith(":wait"):
            seconds = float(line.split()[1]) if len(line.split()) > 1 else 1.0
            return [{"keystrokes": "", "duration": seconds}]
        return [{"keystrokes": line + "\n", "duration": 1.0}]

    def is_prompt_line(self, line: str) -> bool:
        match = PROMPT_RE.match(line.rstrip())
        return match is not None and not (match.group("cmd") or "").strip()

    def agent_action(self, value: Any) -> Any:
        return value if _is_keystrokes(value) else None

    def agent_help(self, spec: WorldSpec) -> str:
        return AGENT_HELP


ACTIONS = TerminalActions()

"""How actions and past turns become the world model's messages.

Why one module: the text of an action (the user message), the system prompt and the history
window decide the request, hence the cache key and what the model can stay consistent with. The
forms follow the official AgentWorldBench examples (``docs/CONTRACTS.md``), so a world model
trained on them sees in-distribution prompts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentworld.domains.actions import format_json_action, format_terminal_action, last_prompt
from agentworld.domains.base import plugin, resolve
from agentworld.domains.registry import Domain
from agentworld.errors import AgentWorldError
from agentworld.schema import OBSERVATION_MARKER, Message
from agentworld.sim.types import TurnRecord, WorldSpec

TokenCounter = Callable[[str], int]


class ActionError(AgentWorldError):
    """An action the simulator cannot read (wrong shape for the domain); the message says why."""


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (4 characters a token), good enough to keep a prompt in budget."""
    return len(text) // 4


@dataclass(frozen=True)
class ParsedAction:
    """One action, read and rendered.

    Attributes:
        payload: the normalised action (terminal: keystroke list; MCP: ``{"tool_name", "arguments"}``;
            other domains: text), handed to a router.
        key: identity of the call, independent of the turn (for stale replays and pagination).
        tool: what fault filters match (MCP tool name; terminal: first word of the command).
        command: terminal keystrokes joined (for fault templates); ``None`` elsewhere.
    """

    payload: Any
    key: str
    tool: str | None = None
    command: str | None = None
    arguments: dict[str, Any] | None = None

    def text(self, domain: str, first_screen: str | None = None) -> str:
        """The user message sent to the model (terminal: the first turn carries ``**Current State:**``)."""
        if domain == "terminal":
            return format_terminal_action(self.payload, first_screen)
        if domain == "mcp":
            return format_json_action(self.payload)
        return str(self.payload)


def _json(action: str | dict[str, Any] | list[Any], what: str) -> Any:
    if not isinstance(action, str):
        return action
    text = action.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ActionError(f"malformed {what} action: not valid JSON ({exc}); "
                          f"expected {_SHAPES[what]}") from None


_SHAPES = {"terminal": '[{"keystrokes": "ls\\n", "duration": 0.5}, ...]',
           "mcp": '{"tool_name": "...", "arguments": {...}}'}


def parse_action(domain: str, action: str | dict[str, Any] | list[Any]) -> ParsedAction:
    """Read an action in the domain's form, or raise :class:`ActionError` naming the problem."""
    if domain == "terminal":
        return _terminal(_json(action, "terminal"))
    if domain == "mcp":
        return _mcp(_json(action, "mcp"))
    text = action if isinstance(action, str) else json.dumps(action, ensure_ascii=False)
    found = plugin(domain)
    render = (found.extra or {}).get("render_action") if found is not None else None
    if render:  # the domain's row form (search: **Action:** + fenced tool call), as its recorder writes
        text = resolve(render)(action)
    return ParsedAction(payload=text, key=" ".join(text.split()))


def _terminal(data: Any) -> ParsedAction:
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data:
        raise ActionError("terminal action must be a non-empty list of keystroke batches, "
                          f"e.g. {_SHAPES['terminal']}")
    steps: list[dict[str, Any]] = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("keystrokes"), str):
            raise ActionError(f"terminal action item {i}: expected an object with a string 'keystrokes'")
        duration = item.get("duration", 1.0)
        if isinstance(duration, bool) or not isinstance(duration, int | float) or duration < 0:
            raise ActionError(f"terminal action item {i}: 'duration' must be a number >= 0, got {duration!r}")
        steps.append({**item, "keystrokes": item["keystrokes"], "duration": duration})
    command = "".join(s["keystrokes"] for s in steps)
    words = command.strip().split()
    return ParsedAction(payload=steps, key=" ".join(words), tool=words[0] if words else None, command=command)


def _mcp(data: Any) -> ParsedAction:
    if not isinstance(data, dict):
        raise ActionError(f"mcp action must be one JSON object {_SHAPES['mcp']}, got {type(data).__name__}")
    name = data.get("tool_name", data.get("name"))
    if not isinstance(name, str) or not name:
        raise ActionError("mcp action: missing string field 'tool_name'")
    args = data.get("arguments", {})
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ActionError(f"mcp action: 'arguments' must be an object, got {type(args).__name__}")
    key = f"{name} {json.dumps(args, sort_keys=True, ensure_ascii=False)}"
    return ParsedAction(payload={"tool_name": name, "arguments": args}, key=key, tool=name, arguments=args)


def shell_prompt(screen: str) -> str | None:
    """The last shell prompt of a screen without its command (``root@abc:/app#``), if any."""
    m = last_prompt(screen)
    return f"{m['user']}@{m['host']}:{m['cwd']}{m['sigil']}" if m else None


def initial_observation(spec: WorldSpec, seed: int) -> str:
    """What ``reset`` shows: the terminal's first screen, an MCP server's tool list, else the state."""
    if spec.domain == "terminal":
        return spec.initial_state or f"root@{_container_id(seed)}:/app#"
    if spec.domain == "mcp":
        title = f"MCP server {spec.name!r}" if spec.name else "MCP server"
        lines = []
        for tool in spec.tools:
            desc = str(tool.get("description") or "").strip().splitlines()
            lines.append(f"- {tool.get('name')}" + (f": {desc[0]}" if desc else ""))
        if not lines:
            return f"{title} ready. No tools listed."
        return f"{title} ready. {len(lines)} tools available:\n" + "\n".join(lines)
    return spec.initial_state


def _container_id(seed: int) -> str:
    """The sandbox's hostname for ``seed``, so a real sandbox and the model agree on the prompt."""
    try:
        from agentworld.envs.sandbox import container_id
    except ImportError:
        return hashlib.sha256(f"agentworld-sandbox:{seed}".encode()).hexdigest()[:12]
    return container_id(seed)


def conflicts_message(found: Sequence[Any]) -> str:
    """The re-ask: each ledger conflict named, with the expected and found values when known."""
    lines = []
    for c in found:
        pairs = (("expected", getattr(c, "expected", None)), ("found", getattr(c, "found", None)))
        extra = "; ".join(f"{k}: {v}" for k, v in pairs if v is not None)
        lines.append(f"- {getattr(c, 'message', c)}" + (f" ({extra})" if extra else ""))
    return ("Your observation contradicts the authoritative session state:\n" + "\n".join(lines)
            + "\nRewrite the whole observation so it agrees with the session state and the history, "
              "in the same format and tags.")


def observation_message(observation: str) -> str:
    return f"{OBSERVATION_MARKER}\n{observation}"


def system_prompt(spec: WorldSpec, domain: Domain, *, ledger: str = "", omitted: int = 0,
                  initial_state: str | None = None) -> str:
    """The system prompt: template (or the spec's own), tools, initial state, facts, session state.

    ``initial_state`` is given when the world's first screen must be restated (the terminal, once
    the first turn that carried it has been dropped from the history). A spec's own prompt replaces
    template, tools and initial state; facts, restated state and session state are still appended:
    the framework enforces them, not the prompt author.
    """
    own = spec.system_prompt is not None
    parts = [(spec.system_prompt if spec.system_prompt is not None else domain.system_prompt).rstrip()]
    if not own and spec.domain == "mcp" and spec.tools:
        tools = json.dumps({"tools": spec.tools}, indent=2, ensure_ascii=False)
        parts.append("# Available tools\n" + tools)
    if initial_state is None:
        initial_state = "" if own or spec.domain == "terminal" else spec.initial_state
    if initial_state:
        parts.append("# Initial state\n" + initial_state)
    if spec.controls.facts:
        parts.append("# World facts\n" + "\n".join(f"- {fact}" for fact in spec.controls.facts))
    if ledger or omitted:
        note = f"{omitted} earlier turns omitted; their effects are in the session state." if omitted else ""
        parts.append("# Session state (authoritative)\n" + "\n".join(p for p in (ledger, note) if p))
    return "\n\n".join(parts)


def omitted_turns(turns: Sequence[TurnRecord], budget: int, count: TokenCounter = estimate_tokens) -> int:
    """How many of the oldest whole turns to drop so the rest fit ``budget`` tokens."""
    total = 0
    keep = 0
    for turn in reversed(turns):
        total += count(turn.action) + count(observation_message(turn.observation))
        if total > budget:
            break
        keep += 1
    return len(turns) - keep


def build_messages(system: str, turns: Sequence[TurnRecord], current: str,
                   extra: Sequence[Message] = ()) -> list[Message]:
    """System, then user/assistant pairs of the kept turns, then the current action (and any extra)."""
    out = [Message(role="system", content=system)]
    for turn in turns:
        out.append(Message(role="user", content=turn.action))
        out.append(Message(role="assistant", content=observation_message(turn.observation)))
    out.append(Message(role="user", content=current))
    out.extend(extra)
    return out

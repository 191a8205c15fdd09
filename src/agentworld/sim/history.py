"""How actions and past turns become the world model's messages.

Why one module: the text of an action (the user message), the system prompt and the history
window decide the request, hence the cache key and what the model can stay consistent with. The
forms follow the official AgentWorldBench examples (``docs/CONTRACTS.md``), so a world model
trained on them sees in-distribution prompts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agentworld.domains.hooks import ActionError, DomainActions, ParsedAction, RawAction, domain_actions
from agentworld.domains.registry import Domain
from agentworld.schema import OBSERVATION_MARKER, Message
from agentworld.sim.types import TurnRecord, WorldSpec

TokenCounter = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (4 characters a token), good enough to keep a prompt in budget."""
    return len(text) // 4


def parse_action(domain: str, action: RawAction) -> ParsedAction:
    """Read an action in the domain's form, or raise :class:`ActionError` naming the problem."""
    return domain_actions(domain).parse(action)


def initial_observation(spec: WorldSpec, seed: int) -> str:
    """What ``reset`` shows (the domain's hook: the terminal's first screen, an MCP server's tool list)."""
    return domain_actions(spec.domain).initial_observation(spec, seed)


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
                  initial_state: str | None = None, actions: DomainActions | None = None) -> str:
    """The system prompt: template (or the spec's own), the domain's sections (MCP: tools), initial
    state, facts, session state.

    ``initial_state`` is given when the world's first screen must be restated (the terminal, once
    the first turn that carried it has been dropped from the history). A spec's own prompt replaces
    template, domain sections and initial state; facts, restated state and session state are still
    appended: the framework enforces them, not the prompt author.
    """
    actions = actions or domain_actions(spec.domain)
    own = spec.system_prompt is not None
    parts = [(spec.system_prompt if spec.system_prompt is not None else domain.system_prompt).rstrip()]
    if not own:
        parts.extend(actions.prompt_sections(spec))
    if initial_state is None:
        initial_state = "" if own or actions.initial_in_action else spec.initial_state
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


__all__ = ["ActionError", "ParsedAction", "TokenCounter", "build_messages", "conflicts_message",
           "estimate_tokens", "initial_observation", "observation_message", "omitted_turns", "parse_action",
           "system_prompt"]

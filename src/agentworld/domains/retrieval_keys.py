"""What the retrieval world model compares, per domain, and what it may rewrite in a reused observation.

The retrieval index (:mod:`agentworld.models.retrieval`) is domain-free: it asks the domain's
:class:`RetrievalKeys` for an action's key (text compared by character n-grams, a *group* that must
match when the corpus has one — the MCP tool name — and extra tokens such as argument pairs), for
the context around it, for whether a screen is at a prompt, and for the safe rewrite of a recorded
observation into the current session. A domain's plugin names its keys (``retrieval_keys=``); the
default, :class:`ToolCallKeys`, returns a tool result as recorded, since any change would be invented.
The terminal's keys (:mod:`agentworld.domains.terminal.retrieval`) rewrite prompt host, cwd and echo.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agentworld.domains.actions import normalise_action, tool_call
from agentworld.domains.base import DomainPlugin, plugin_of, resolve

FIRST_TURN = "(first turn)"
"""The context of a first action: two first turns share it, as two later turns share their predecessor."""


@dataclass(frozen=True)
class ActionKey:
    """An action as retrieval compares it.

    Attributes:
        text: normalised action (terminal keystrokes joined; MCP ``tool k=v`` with sorted arguments).
        group: what a neighbour should share when the corpus has any such (the MCP tool name).
        tokens: extra features beside the character n-grams of ``text`` (MCP: one per argument
            ``name=value`` leaf and one per argument name), so argument overlap counts as such.
    """

    text: str
    group: str | None = None
    tokens: tuple[str, ...] = ()


class RetrievalKeys(Protocol):
    """A domain's side of retrieval; see :func:`retrieval_keys`."""

    exact_first: bool
    """Rank a recorded action identical to the query above any merely similar one."""
    context_weight: float
    """Share of the similarity given to the context (the rest: the action, and a bonus when identical)."""

    def key(self, action: str) -> ActionKey: ...

    def context(self, prev_action: str | None, prev_obs: str | None, first_action: str) -> str:
        """What the turn before looked like (compared with a small weight)."""
        ...

    def observation_mode(self, observation: str) -> bool | None:
        """Whether a recorded observation starts at a prompt (None: the domain has no such modes)."""
        ...

    def query_mode(self, prev_obs: str | None, first_action: str) -> bool | None:
        """Whether the current screen ends at a bare prompt (None: unknown or no such modes)."""
        ...

    def adapt(self, observation: str, action: str, first_action: str, observations: Sequence[str]) -> str:
        """The recorded ``observation`` rewritten for the current session, where that is safe."""
        ...


def _leaves(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, dict):
        for k in sorted(value):
            yield from _leaves(value[k], f"{path}.{k}")
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item, path)
    else:
        yield f"{path}={json.dumps(value)}"


class ToolCallKeys:
    """Tool calls (MCP, and the default for domains whose actions are JSON calls or plain text)."""

    exact_first = True
    context_weight = 0.05
    """The arguments make the call; the call before only tells otherwise equal candidates apart."""

    def key(self, action: str) -> ActionKey:
        text = normalise_action(action)
        call = tool_call(action)
        if call is None:
            return ActionKey(text)
        name, args = call
        tokens = [f"arg:{leaf}" for k in sorted(args) for leaf in _leaves(args[k], k)]
        tokens += [f"argname:{k}" for k in sorted(args)]
        return ActionKey(text, group=name, tokens=tuple(tokens))

    def context(self, prev_action: str | None, prev_obs: str | None, first_action: str) -> str:
        return normalise_action(prev_action) if prev_action else FIRST_TURN

    def observation_mode(self, observation: str) -> bool | None:
        return None

    def query_mode(self, prev_obs: str | None, first_action: str) -> bool | None:
        return None

    def adapt(self, observation: str, action: str, first_action: str, observations: Sequence[str]) -> str:
        return observation


_TOOL_CALLS = ToolCallKeys()


def retrieval_keys(domain: str | DomainPlugin | None) -> RetrievalKeys:
    """The keys ``domain``'s plugin names (tool-call keys for a domain without its own, and for None)."""
    found = plugin_of(domain) if domain else None
    if found is None or found.retrieval_keys is None:
        return _TOOL_CALLS
    keys: RetrievalKeys = resolve(found.retrieval_keys)
    return keys

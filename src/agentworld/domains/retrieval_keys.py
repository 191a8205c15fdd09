"""What the retrieval world model compares, per domain, and what it may rewrite in a reused observation.

The retrieval index (:mod:`agentworld.models.retrieval`) is domain-free: it asks the domain's
:class:`RetrievalKeys` for an action's key (text compared by character n-grams, a *group* that must
match when the corpus has one — the MCP tool name — and extra tokens such as argument pairs), for
the context around it, for whether a screen is at a prompt, and for the safe rewrite of a recorded
observation into the current session. Only the terminal rewrites anything (prompt host and cwd,
the echoed command); a tool result is returned as recorded, since any change would be invented.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agentworld.domains.actions import (
    PROMPT_RE,
    last_prompt,
    normalise_action,
    terminal_keystrokes,
    terminal_state,
    tool_call,
)
from agentworld.schema import OBSERVATION_MARKER, strip_marker

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


class TerminalKeys:
    """Keystrokes, the cwd before them, prompt/program mode; prompts and echo rewritten to this session."""

    exact_first = False
    context_weight = 0.15

    def key(self, action: str) -> ActionKey:
        return ActionKey(normalise_action(action, "terminal"))

    def context(self, prev_action: str | None, prev_obs: str | None, first_action: str) -> str:
        screen = strip_marker(prev_obs) if prev_obs else (terminal_state(first_action) or "")
        m = last_prompt(screen)
        cwd = m.group("cwd") if m else ""
        prev = normalise_action(prev_action, "terminal") if prev_action else ""
        return f"{prev} cwd={cwd}".strip()

    def observation_mode(self, observation: str) -> bool | None:
        first = strip_marker(observation).split("\n", 1)[0]
        return PROMPT_RE.match(first.rstrip()) is not None

    def query_mode(self, prev_obs: str | None, first_action: str) -> bool | None:
        screen = strip_marker(prev_obs) if prev_obs else terminal_state(first_action)
        if not screen or not screen.strip():
            return None
        m = PROMPT_RE.match(screen.rstrip().splitlines()[-1].rstrip())
        return m is not None and not m.group("cmd")

    def adapt(self, observation: str, action: str, first_action: str, observations: Sequence[str]) -> str:
        """Rewrite prompts to the current host/cwd and the echoed command to the current keystrokes."""
        screens = (terminal_state(first_action) or "", *observations)
        # The last prompt of any earlier screen: the previous one may show a running program instead.
        here = next((m for m in (last_prompt(strip_marker(s)) for s in reversed(screens)) if m), None)
        lines = strip_marker(observation).splitlines()
        if here is None or not lines:
            return observation
        first = PROMPT_RE.match(lines[0])
        old_cwd = first.group("cwd") if first else None
        recorded = next((m.group("host") for m in map(PROMPT_RE.match, lines) if m), None)
        if recorded and recorded != here.group("host"):
            # The recorded container's id is this session's id wherever it appears (e.g. `hostname`).
            lines = [line if PROMPT_RE.match(line) else line.replace(recorded, here.group("host"))
                     for line in lines]
        command = (terminal_keystrokes(action) or "").split("\n")[0].rstrip()
        for n, line in enumerate(lines):
            m = PROMPT_RE.match(line)
            if m:
                cwd = here.group("cwd") if m.group("cwd") == old_cwd else m.group("cwd")
                head = f"{here.group('user')}@{here.group('host')}:{cwd}{m.group('sigil')}"
                cmd = m.group("cmd")
                if n == 0 and cmd is not None and command and not re.fullmatch(r"C-\w", command):
                    cmd = command
                lines[n] = f"{head} {cmd}" if cmd is not None else head
        return f"{OBSERVATION_MARKER}\n" + "\n".join(lines)


_TOOL_CALLS = ToolCallKeys()
_KEYS: dict[str, RetrievalKeys] = {"terminal": TerminalKeys()}


_NO_PLUGIN_KEYS: set[str] = set()


def retrieval_keys(domain: str | None) -> RetrievalKeys:
    """The domain's :class:`RetrievalKeys`: registered here, else its package's ``PLUGIN.retrieval_keys``
    (imported once), else tool-call keys (also for None)."""
    name = domain or ""
    if name and name not in _KEYS and name not in _NO_PLUGIN_KEYS:
        from agentworld.domains.base import plugin, resolve

        found = plugin(name)
        if found is not None and found.retrieval_keys:
            _KEYS[name] = resolve(found.retrieval_keys)
        else:
            _NO_PLUGIN_KEYS.add(name)
    return _KEYS.get(name, _TOOL_CALLS)

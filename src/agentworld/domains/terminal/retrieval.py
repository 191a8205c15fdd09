"""The terminal's retrieval keys: keystrokes, the cwd before them, and prompt/program mode.

A reused screen is rewritten to the current session: prompts to this host and cwd, the echoed
command to the current keystrokes (and the recorded container id wherever it appears).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentworld.domains.actions import (
    PROMPT_RE,
    last_prompt,
    normalise_action,
    terminal_keystrokes,
    terminal_state,
)
from agentworld.domains.retrieval_keys import ActionKey
from agentworld.schema import OBSERVATION_MARKER, strip_marker


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


KEYS = TerminalKeys()

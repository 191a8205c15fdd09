"""The terminal prompt's vocabulary: keystroke batches (``keystrokes``, ``duration``), the tmux key
names sent as one key, and the screens' layouts (:mod:`agentworld.domains.vocabulary`)."""

from __future__ import annotations

import json
import re

from agentworld.domains.vocabulary import Call, Layout, PromptVocabulary, backticked_names, section
from agentworld.envs.terminal import is_key_name

BATCH = "keystrokes"
"""The one "tool" of a terminal: a batch of keystrokes; its arguments are the batch's fields."""


def calls(action: str) -> list[Call]:
    m = re.search(r"\*\*Action:\*\*\s*```(?:json)?\s*\n(.*?)\n```", action, re.S)
    try:
        batches = json.loads(m.group(1) if m else action)
    except ValueError:
        return []
    found = []
    for batch in batches if isinstance(batches, list) else [batches]:
        if isinstance(batch, dict):
            found.append(Call(BATCH, frozenset(batch)))
            keys = batch.get("keystrokes")
            if isinstance(keys, str) and is_key_name(keys):
                found.append(Call(keys))
    return found


def described(prompt: str) -> dict[str, frozenset[str]]:
    names = backticked_names(section(prompt, "Actions"))
    found: dict[str, frozenset[str]] = {name: frozenset() for name in names if is_key_name(name)}
    found[BATCH] = frozenset(names & {"keystrokes", "duration"})
    return found


LAYOUTS = (
    Layout("screen", r"\A", ("the command's stdout and stderr",)),
    Layout("shell prompt", r"\A\S+@\S+:[^\n]*[#$]", ("`root@ad092d3df69c:/app# ls -la`",)),
    Layout("python prompt", r"\A>>>", ("`>>>`",)),
    Layout("continuation prompt", r"\A> ", ("`> `",)),
    Layout("interrupt", r"\^C", ("prints `^C`",)),
)

VOCABULARY = PromptVocabulary(calls=calls, described=described, layouts=LAYOUTS,
                              offered=lambda tool: tool == BATCH or is_key_name(tool))

"""The MCP prompt's vocabulary: tools and arguments come from the tool catalogue a row's system prompt
carries (the recorded server's ``tools/list``); layouts are the servers' result and error shapes
(:mod:`agentworld.domains.vocabulary`)."""

from __future__ import annotations

import json

from agentworld.domains.actions import tool_call
from agentworld.domains.vocabulary import Call, Layout, PromptVocabulary

CATALOGUE = "# Available tools\n"


def calls(action: str) -> list[Call]:
    found = tool_call(action)
    return [Call(found[0], frozenset(found[1]))] if found else []


def described(prompt: str) -> dict[str, frozenset[str]]:
    """Each catalogued tool with its ``inputSchema`` properties (none without a catalogue)."""
    start = prompt.find(CATALOGUE)
    if start < 0:
        return {}
    tools, _ = json.JSONDecoder().raw_decode(prompt[start + len(CATALOGUE):].lstrip())
    return {t["name"]: frozenset((t.get("inputSchema") or {}).get("properties") or {})
            for t in tools.get("tools", [])}


LAYOUTS = (
    Layout("result", r"\A", ("the raw tool result",)),
    Layout("json", r"\A\s*[\[{]", ("JSON (an object or list)",)),
    Layout("protocol error", r"\AMCP error -?\d+: ", ("`MCP error -32602: ",)),
    Layout("tool exception", r"\AError executing tool \w+: ", ("`Error executing tool <name>: ",)),
    Layout("system error", r"\AE[A-Z]+: [a-z]", ("`ENOENT: no such file or directory, open '<path>'`",)),
    Layout("error", r"\AError: ", ("`Error: ",)),
)

VOCABULARY = PromptVocabulary(calls=calls, described=described, layouts=LAYOUTS, offered=lambda tool: True)
"""``offered``: every catalogued tool is the recorded server's own, used by the corpus or not."""

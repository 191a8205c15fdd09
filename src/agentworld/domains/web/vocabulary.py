"""The web prompt's vocabulary: BrowserGym calls (keyword argument names) and the page layout
(:mod:`agentworld.domains.vocabulary`)."""

from __future__ import annotations

import ast
import re

from agentworld.domains.vocabulary import Call, Layout, PromptVocabulary, section
from agentworld.domains.web.actions import web_call
from agentworld.envs.browser import OFFICIAL_ACTIONS


def calls(action: str) -> list[Call]:
    try:
        node = ast.parse(web_call(action), mode="eval").body
    except SyntaxError:
        return []
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return []
    return [Call(node.func.id, frozenset(k.arg for k in node.keywords if k.arg))]


def described(prompt: str) -> dict[str, frozenset[str]]:
    """The signatures of the ``# Actions`` section's code block: ``click(bid: str, button: … = …)``."""
    found = {}
    for name, params in re.findall(r"(?m)^(\w+)\((.*)\)$", section(prompt, "Actions")):
        found[name] = frozenset(re.findall(r"(\w+):", params))
    return found


LAYOUTS = (
    Layout("page", r"\ATab \d+", ("`Tab 0 (current): <page title>`", "`URL: <url of the current tab>`")),
    Layout("other tab", r"^Tab \d+: ", ("`Tab 1: <page title>`",)),
    Layout("tree", r"^\t*\[\d+\] \w+ '", ("`[bid] role 'accessible name'`",)),
    Layout("error", r"^Error: ", ("`Error: <message>`",)),
)

VOCABULARY = PromptVocabulary(calls=calls, described=described, layouts=LAYOUTS,
                              offered=OFFICIAL_ACTIONS.__contains__)

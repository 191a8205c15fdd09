"""The search prompt's vocabulary: the three tools' calls and the layouts the real tools answer with
(:mod:`agentworld.domains.vocabulary`; the layouts are those of :mod:`agentworld.domains.search.tools`)."""

from __future__ import annotations

from agentworld.domains.actions import tool_call
from agentworld.domains.search.tools import TOOLS
from agentworld.domains.vocabulary import Call, Layout, PromptVocabulary, described_tools


def calls(action: str) -> list[Call]:
    found = tool_call(action)
    return [Call(found[0], frozenset(found[1]))] if found else []


_MEMORY = frozenset({"dict_memory"})
LAYOUTS = (
    Layout("search results", r"^\[\d+\] \S+\nTitle: .*\nSnippet: .*\nDate: ",
           ("`[1] <url>`", "`Title: <page title>`", "`Snippet: ", "`Date: N/A`"), frozenset({"web_search"})),
    Layout("no results", r"^No results found for '", ("`No results found for '<query>'.`",)),
    Layout("page", r"\A# ", ("`# <page title>`",), frozenset({"web_extractor"})),
    Layout("truncated page", r"^\[\.\.\. content truncated \.\.\.\]$", ("`[... content truncated ...]`",)),
    Layout("memory added", r"\ASuccessfully added items of \[", ("`Successfully added items of ['<key>'",)),
    Layout("memory updated", r"\ASuccessfully updated items of \[", ("`Successfully updated items\n  of",)),
    Layout("memory removed", r"\ASuccessfully removed items of \[", ("`Successfully removed items of",)),
    Layout("memory cleared", r"\ASuccessfully cleared all memory\.$", ("cleared all memory.`",)),
    Layout("memory notes", r'\A\{\n  "', ("as a JSON object indented\n  by two spaces",), _MEMORY),
    Layout("memory empty", r"\AMemory is empty\.$", ("`Memory is empty.`",)),
    Layout("key not found", r"^Key not found: \[", ("`Key not found: ['<key>']`",)),
    Layout("error", r"\AError: ", ("`Error: ",)),
)

VOCABULARY = PromptVocabulary(calls=calls, described=described_tools, layouts=LAYOUTS,
                              offered=TOOLS.__contains__)

"""Every domain's system prompt describes what its recordings contain, and nothing they lack (issue 21 §4).

For each domain with a shipped corpus (generic over the registry; the per-domain reading lives in each
domain package's ``vocabulary.py``): every tool, argument name and observation layout in the corpus is
described by the row's ``system_str``, which is the domain's system prompt; the prompt describes no tool
the recordings never call unless the real environment offers it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.domains import DOMAINS, domain_names
from agentworld.domains.base import plugin
from agentworld.domains.vocabulary import prompt_drift, vocabulary


def _corpus_file(name: str) -> Path | None:
    found = plugin(name)
    return found.data_file(found.corpus) if found is not None else None


RECORDED = [name for name in domain_names() if _corpus_file(name) is not None]


def rows(name: str) -> list[dict[str, Any]]:
    path = _corpus_file(name)
    assert path is not None
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def test_every_recorded_real_domain_is_checked() -> None:
    assert {"terminal", "mcp", "search", "swe", "web"} <= set(RECORDED)
    assert all(vocabulary(name) is not None for name in RECORDED)


@pytest.mark.parametrize("name", RECORDED)
def test_the_prompt_describes_every_tool_argument_and_layout_of_the_corpus(name: str) -> None:
    assert prompt_drift(name, rows(name), DOMAINS[name].system_prompt) == []


@pytest.mark.parametrize("name", RECORDED)
def test_every_row_carries_the_domain_s_prompt(name: str) -> None:
    prompt = DOMAINS[name].system_prompt
    stale = [r["id"] for r in rows(name) if not r["system_str"].startswith(prompt)]
    assert stale == [], f"{len(stale)} rows carry another system prompt, e.g. {stale[:3]}"


@pytest.mark.parametrize("name", RECORDED)
def test_a_prompt_that_stops_describing_the_layouts_is_caught(name: str) -> None:
    bare = [{**r, "system_str": r["system_str"].replace("`", "")} for r in rows(name)]
    assert any("is not described" in p for p in prompt_drift(name, bare, DOMAINS[name].system_prompt))


OLD_SEARCH_ACTIONS = """# Actions

- `{"tool_name": "search", "arguments": {"query": "tallest building in Oslo 2024"}}` — a web search.
- `{"tool_name": "visit", "arguments": {"url": "https://...", "goal": "the opening year"}}` — open a page.

# Observations

- A search returns a header line naming the query, then a numbered list of results.
"""


def test_the_old_search_prompt_fails_both_ways() -> None:
    """The search prompt before issue 21 named ``search``/``visit`` and a header layout."""
    old = [{**r, "system_str": OLD_SEARCH_ACTIONS} for r in rows("search")]
    problems = "\n".join(prompt_drift("search", old, OLD_SEARCH_ACTIONS))
    for tool in ("web_search", "web_extractor", "dict_memory"):
        assert f"tool {tool!r} is not described" in problems
    assert "layout 'search results' is not described" in problems
    for tool in ("search", "visit"):
        assert f"the prompt describes tool {tool!r}, which the recordings never call" in problems

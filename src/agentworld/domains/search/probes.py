"""Rule-checked probes of a web-search world model (``agentworld eval probes``).

Controllability: world facts (the search engine answers HTTP 429, a query has 3 pages of results and
page 2 is asked for, a given first result) must show in the tool result. Error handling: the tools'
``Error: …`` shapes (a missing argument, an unknown tool, an unreachable page) and ``dict_memory``'s
``Key not found``. Long context: a note stored in memory early is retrieved after 10, 50 and 100
intervening calls.
"""

from __future__ import annotations

import json
import re

from agentworld.domains.probes import (
    CONTEXT_GAPS,
    Probe,
    contains,
    failure,
    make,
    regex,
    rng,
    system_prompt,
    token,
    tool_action,
    with_facts,
)
from agentworld.domains.search import PLUGIN

DOMAIN = "search"


def _results(start: int, query: str, count: int = 3) -> str:
    return "\n\n".join(f"[{i}] https://docs.{query}.example/page{i}.html\nTitle: {query} {i}\n"
                       f"Snippet: About {query}.\nDate: N/A" for i in range(start, start + count))


def _controllability(seed: int, variants: int, system: str) -> list[Probe]:
    out = []
    for n in range(variants):
        r = rng(seed, DOMAIN, "control", n)
        query = token(r, 7)
        out.append(make(DOMAIN, "controllability", "http-429", n, with_facts(
            system, ["The search engine rate-limits this agent: every web_search call fails with HTTP 429 "
                     "Too Many Requests."]), [], tool_action("web_search", {"query": query}),
            "Error: search request failed: HTTP 429 Too Many Requests",
            [regex(r"\b429\b"), regex(r"^Error:")]))
        out.append(make(DOMAIN, "controllability", "page-2-of-3", n, with_facts(
            system, [f"A web_search for {query!r} has exactly 3 pages of 10 results; a call with page 2 "
                     "returns page 2 of 3, numbered from [11], headed 'Page 2 of 3'."]), [],
            tool_action("web_search", {"query": query, "page": 2}), "Page 2 of 3\n\n" + _results(11, query),
            [regex(r"(?i)\bpage\s*2\s*(of|/)\s*3\b"), regex(r"^\[11\] ")]))
        url = f"https://{token(r)}.example.org/{token(r, 5)}"
        out.append(make(DOMAIN, "controllability", "first-result", n, with_facts(
            system, [f"The first result of a web_search for {query!r} is {url}"]), [],
            tool_action("web_search", {"query": query}),
            f"[1] {url}\nTitle: {query}\nSnippet: About {query}.\nDate: N/A\n\n" + _results(2, query, 2),
            [regex(rf"^\[1\] {re.escape(url)}\s*$")]))
    return out


def _errors(seed: int, variants: int, system: str) -> list[Probe]:
    out = []
    for n in range(variants):
        r = rng(seed, DOMAIN, "errors", n)
        tool, key, host = f"{token(r)}_search", token(r, 5), token(r)
        out.append(make(DOMAIN, "error_handling", "missing-argument", n, system, [],
                        tool_action("web_extractor", {"goal": f"find {token(r)}"}),
                        "Error: web_extractor needs 'url' (a string)",
                        [regex(r"^Error: "), contains("url"), failure(PLUGIN.error_patterns)]))
        out.append(make(DOMAIN, "error_handling", "unknown-tool", n, system, [],
                        tool_action(tool, {"query": token(r)}),
                        f"Error: unknown tool {tool!r}; available: web_search, web_extractor, dict_memory",
                        [regex(r"^Error: unknown tool"), contains(tool), failure(PLUGIN.error_patterns)]))
        url = f"https://{host}.invalid/{token(r, 4)}"
        out.append(make(DOMAIN, "error_handling", "unreachable-page", n, system, [],
                        tool_action("web_extractor", {"url": url, "goal": "summary"}),
                        f"Error: failed to fetch {url}: the page is not accessible",
                        [regex(r"^Error: failed to fetch"), contains(url), failure(PLUGIN.error_patterns)]))
        out.append(make(DOMAIN, "error_handling", "missing-key", n, system, [],
                        tool_action("dict_memory", {"operation": "retrieve", "key_list": [key]}),
                        f"{{}}\nKey not found: ['{key}']",
                        [contains(f"Key not found: ['{key}']"), failure(PLUGIN.error_patterns)]))
    return out


def _long_context(seed: int, variants: int, system: str) -> list[Probe]:
    out = []
    for n in range(variants):
        r = rng(seed, DOMAIN, "context", n)
        key, value = token(r, 5), f"{token(r, 8)}-{r.randint(1000, 9999)}"
        for gap in CONTEXT_GAPS:
            history = [(tool_action("dict_memory", {"operation": "add", "dict": {key: value}}),
                        f"Successfully added items of ['{key}'] to memory.")]
            history += [(tool_action("dict_memory", {"operation": "add", "dict": {f"note{i}": f"n{i}"}}),
                         f"Successfully added items of ['note{i}'] to memory.") for i in range(1, gap + 1)]
            out.append(make(DOMAIN, "long_context", "memory-recall", n, system, history,
                            tool_action("dict_memory", {"operation": "retrieve", "key_list": [key]}),
                            json.dumps({key: value}, indent=2), [contains(value)], gap=gap))
    return out


def generate(seed: int, variants: int) -> list[Probe]:
    """The search probes of ``seed``: ``variants`` of each template (values drawn per variant)."""
    system = system_prompt(__package__ or "")
    return [*_controllability(seed, variants, system), *_errors(seed, variants, system),
            *_long_context(seed, variants, system)]

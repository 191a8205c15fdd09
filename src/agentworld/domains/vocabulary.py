"""What a domain's system prompt promises about its recordings: tools, argument names, observation layouts.

Why: a world model writes what its system prompt describes. When the prompt names tools the
recordings never call, or layouts they never show (the search prompt once described ``search`` and
``visit`` with a header line, over rows of ``web_search`` results in ``[n] url / Title / Snippet``
blocks), a model that follows its prompt is wrong on every turn. A domain states, in its own package
(``DomainPlugin.extra["vocabulary"]``, a :class:`PromptVocabulary`), how to read the tools and
arguments of its actions, which tools and arguments a prompt describes, and its observation layouts
with the text that describes each; :func:`prompt_drift` then compares prompt and recordings, for any
domain, both ways.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentworld.domains.base import DomainPlugin, plugin_of, resolve
from agentworld.domains.failures import is_error, observation_body


@dataclass(frozen=True)
class Call:
    """One tool use in an action: the tool's name and the argument names given."""

    tool: str
    arguments: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Layout:
    """One observation layout: where it shows and the texts a prompt that describes it contains.

    Attributes:
        name: for messages.
        pattern: regular expression (``re.M``) that finds the layout in an observation body.
        described: every one of these texts is in a system prompt that describes the layout.
        tools: the layout counts only for actions calling one of these tools (empty: any action).
    """

    name: str
    pattern: str
    described: tuple[str, ...]
    tools: frozenset[str] = frozenset()


@dataclass(frozen=True)
class PromptVocabulary:
    """A domain's reading of its actions and its system prompt.

    Attributes:
        calls: the tool uses of one action text.
        described: the tools a system prompt describes, each with the argument names it describes.
        layouts: the domain's observation layouts; every recorded observation shows at least one.
        offered: whether the domain's real environment executes a tool: a prompt may describe a tool
            the corpus happens not to call only when the environment offers it.
    """

    calls: Callable[[str], list[Call]]
    described: Callable[[str], Mapping[str, frozenset[str]]]
    layouts: tuple[Layout, ...]
    offered: Callable[[str], bool] = field(default=lambda tool: False)


def vocabulary(domain: str | DomainPlugin) -> PromptVocabulary | None:
    """The domain's :class:`PromptVocabulary` (its plugin's ``extra["vocabulary"]``), or None."""
    reference = (plugin_of(domain).extra or {}).get("vocabulary")
    return resolve(reference) if reference else None


def backticked_names(text: str) -> set[str]:
    """Identifiers written in backticks (`` `web_search` ``, `` `key_list` ``)."""
    return set(re.findall(r"`([A-Za-z_][\w-]*)`", text))


def section(prompt: str, heading: str) -> str:
    """The text of a ``# heading`` section of a prompt (empty when it has none)."""
    m = re.search(rf"(?ms)^# {re.escape(heading)}\n(.*?)(?=^# |\Z)", prompt)
    return m.group(1) if m else ""


def bullet_tools(prompt: str) -> dict[str, frozenset[str]]:
    """Tools described as bullets of the ``# Actions`` section: ``- `tool` — `arg`, optional `arg2` …``
    (continuation lines indented), each with the backticked names of its bullet."""
    found: dict[str, frozenset[str]] = {}
    for m in re.finditer(r"(?m)^- `(\w+)` —(.*(?:\n  .*)*)", section(prompt, "Actions")):
        found[m.group(1)] = frozenset(backticked_names(m.group(2)))
    return found


def example_tools(prompt: str) -> dict[str, frozenset[str]]:
    """Tools a prompt's examples call (``"tool_name": "search"``): an example describes its tool too."""
    return {name: frozenset() for name in re.findall(r'"tool_name":\s*"([^"]+)"', prompt)}


def described_tools(prompt: str) -> dict[str, frozenset[str]]:
    """:func:`bullet_tools` and :func:`example_tools` together (the tool-call domains' reading)."""
    found = example_tools(prompt)
    for name, arguments in bullet_tools(prompt).items():
        found[name] = arguments
    return found


def prompt_drift(domain: str, rows: Iterable[Mapping[str, Any]], prompt: str) -> list[str]:
    """Where a domain's recorded rows and system prompts disagree (empty: they agree).

    Each row (AgentWorldBench) is read at its own turn: a call of a tool its ``system_str`` does not
    describe, or with an argument it does not describe, is reported unless the observation is an error
    (the call was refused, as a call of an unknown tool is); an observation that shows no known layout,
    or a layout its ``system_str`` does not describe, is reported. ``prompt`` (the domain's own system
    prompt) may describe no tool that the rows never call and the real environment does not offer.
    """
    vocab = vocabulary(domain)
    if vocab is None:
        return [f"{domain}: no prompt vocabulary (DomainPlugin.extra['vocabulary'])"]
    problems: dict[str, str] = {}
    described_of: dict[str, Mapping[str, frozenset[str]]] = {}
    used: set[str] = set()
    for row in rows:
        sid, system = str(row.get("id")), str(row.get("system_str") or "")
        index = int(row.get("turn_idx") or 1) - 1
        action, observation = row["prompt"][index], row["response"][index]
        body = observation_body(observation)
        described = described_of.setdefault(system, vocab.described(system))
        calls = vocab.calls(action)
        tools = {c.tool for c in calls}
        if not is_error(observation, domain):
            for call in calls:
                used.add(call.tool)
                if call.tool not in described:
                    problems.setdefault(f"tool {call.tool!r} is not described by the prompt", sid)
                for name in sorted(call.arguments - described.get(call.tool, frozenset())):
                    problems.setdefault(f"argument {name!r} of {call.tool!r} is not described", sid)
        shown = [layout for layout in vocab.layouts if (not layout.tools or layout.tools & tools)
                 and re.search(layout.pattern, body, re.M)]
        if not shown:
            problems.setdefault("an observation shows no known layout", sid)
        for layout in shown:
            for text in layout.described:
                if text not in system:
                    problems.setdefault(f"layout {layout.name!r} is not described (no {text!r})", sid)
    for tool in sorted(set(vocab.described(prompt)) - used):
        if not vocab.offered(tool):
            problems.setdefault(f"the prompt describes tool {tool!r}, which the recordings never call "
                                "and the environment does not offer", "prompt")
    return [f"{domain}: {problem} (e.g. {sid})" for problem, sid in problems.items()]


__all__ = ["Call", "Layout", "PromptVocabulary", "backticked_names", "bullet_tools", "described_tools",
           "example_tools", "prompt_drift", "section", "vocabulary"]

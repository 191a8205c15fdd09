"""Rule scoring for search: result-list structure, exact URLs and titles, page text, memory results.

Frame and content (see :mod:`agentworld.eval.rules.scores`): the *frame* is what knowing the official format
and the action gives for free — result numbers ``[n]`` and ``Date:`` lines, and the success message of a
memory write (``Successfully added items of [...] to memory.``, a function of the action). Everything
else is content. Content tiers:

- search results: URLs and titles are *deterministic* (the same index ranks the same pages, with the
  same titles); snippets are pre-existing *environment* text; a "No results found" line is deterministic.
- extracted pages: headings are deterministic (a page's outline is fixed), body lines are environment
  text, lines an earlier turn already showed (a snippet, the title) are deterministic.
- ``dict_memory``: every result is deterministic — memory holds exactly what the episode put there.

Structure: for a result list the number of results, their numbering (running on across a batch) and
four fields each; for a page its heading outline and line shapes; for memory the JSON shape.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from agentworld.domains.actions import tool_call
from agentworld.domains.mcp.rules import json_structure, mcp_units
from agentworld.domains.rules import (
    DomainRules,
    Session,
    Tier,
    clean,
    lines_of,
    multiset_f1,
    norm,
    shape_structure,
)
from agentworld.domains.search.tools import memory_write_message

_RESULT = re.compile(r"^\[(\d+)\] (\S+)$")
_NUMBER = re.compile(r"^\[\d+\]$")
_FIELDS = ("Title:", "Snippet:", "Date:")
_NO_RESULTS = re.compile(r"^No results found for ")
_HEADING = re.compile(r"^(#{1,6}) \S")


def _call(session: Session) -> tuple[str, dict[str, Any]]:
    return tool_call(session.action) or ("", {})


def _is_json(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict | list)
    except ValueError:
        return False


def units(text: str) -> list[str]:
    """Lines, a result's ``[n] URL`` line as two units (number, URL); JSON memory results as leaves."""
    if _is_json(text):
        return mcp_units(text)
    out: list[str] = []
    for line in lines_of(text):
        m = _RESULT.match(line)
        out.extend((f"[{m.group(1)}]", m.group(2)) if m else (line,))
    return out


def _memory_message(session: Session) -> str | None:
    return memory_write_message(*_call(session))


def frame(units_: list[str], session: Session) -> list[bool]:
    """Result numbers, ``Date:`` lines, and a memory write's success message."""
    message = _memory_message(session)
    return [bool(_NUMBER.match(u)) or u.startswith("Date:") or (message is not None and u == norm(message))
            for u in units_]


@lru_cache(maxsize=256)
def _seen(history: tuple[tuple[str, str], ...]) -> frozenset[str]:
    """Normalised lines (and result URLs) of the earlier observations, once per episode prefix."""
    return frozenset(u for _, obs in history for u in units(clean(obs)))


def classify(units_: list[str], session: Session) -> list[Tier]:
    """See the module docstring; units an earlier observation showed are deterministic."""
    name, _ = _call(session)
    if name == "dict_memory":
        return ["deterministic"] * len(units_)
    seen = _seen(session.history)
    out: list[Tier] = []
    for unit in units_:
        if unit.startswith("Date:"):
            out.append("metadata")
        elif (unit in seen or unit.startswith(("http://", "https://", "Title:", "Error:"))
              or _NO_RESULTS.match(unit) or _HEADING.match(unit)):
            out.append("deterministic")
        else:
            out.append("environment")
    return out


def _blocks(text: str) -> list[list[str]]:
    return [lines_of(b) for b in re.split(r"\n\s*\n", text) if b.strip()]


def _result_list(text: str) -> bool:
    return any(_RESULT.match(b[0]) or _NO_RESULTS.match(b[0]) for b in _blocks(text))


def results_structure(pred: str, truth: str) -> tuple[float, dict[str, float]]:
    """Result count, numbering 1..n across the batch, and the four fields of each result in order."""
    t = [b for b in _blocks(truth) if _RESULT.match(b[0])]
    p = [b for b in _blocks(pred) if _RESULT.match(b[0])]
    checks = {"results": 1.0 if len(p) == len(t) else min(len(p), len(t)) / max(len(p), len(t), 1)}
    numbers = [int(m.group(1)) for b in p if (m := _RESULT.match(b[0]))]
    if t:
        right = sum(n == i for i, n in enumerate(numbers, 1))
        checks["numbering"] = right / len(numbers) if numbers else 0.0
        checks["fields"] = (sum(tuple(x.split(" ", 1)[0] for x in b[1:]) == _FIELDS for b in p) / len(p)
                            if p else 0.0)
    empty_t = sum(bool(_NO_RESULTS.match(b[0])) for b in _blocks(truth))
    empty_p = sum(bool(_NO_RESULTS.match(b[0])) for b in _blocks(pred))
    if empty_t or empty_p:
        checks["no_results"] = float(empty_t == empty_p)
    return 100 * sum(checks.values()) / len(checks), checks


def page_structure(pred: str, truth: str, session: Session) -> tuple[float, dict[str, float]]:
    """Heading outline (levels in order) and the generic line shapes."""
    levels = lambda text: [m.group(1) for x in lines_of(text) if (m := _HEADING.match(x))]  # noqa: E731
    t, p = levels(truth), levels(pred)
    shapes, checks = shape_structure(pred, truth, session)
    checks = dict(checks)
    checks["outline"] = multiset_f1(p, t) / 100 if t or p else 1.0
    return 0.5 * shapes + 50 * checks["outline"], checks


def structure(pred: str, truth: str, session: Session) -> tuple[float, dict[str, float]]:
    if _result_list(truth):
        return results_structure(pred, truth)
    if _is_json(truth):
        return json_structure(pred, truth, session)
    if _HEADING.match(truth):
        return page_structure(pred, truth, session)
    return shape_structure(pred, truth, session)


def frame_only(truth: str, session: Session) -> str:
    """The result skeleton the truth's shape implies (numbers and ``Date: N/A``), a memory write's
    success message, or nothing (a page, a memory read: all content)."""
    message = _memory_message(session)
    if message is not None:
        return message
    count = sum(bool(_RESULT.match(b[0])) for b in _blocks(truth))
    return "\n\n".join(f"[{n}]\nDate: N/A" for n in range(1, count + 1))


RULES = DomainRules(units, classify, structure, frame, frame_only)

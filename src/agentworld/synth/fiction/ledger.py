"""The bible ledger: every rendered search result and page is checked against the bible's facts.

Why: a world model that renders or paraphrases pages may change a number or invent a page; the ledger
finds, in each line, the attribute labels of the bible (``population``, ``founding year``), attributes
each to the nearest entity named on the line that has that attribute (or to the page's own subject),
and requires the bible's value between the label and the next label or sentence end. Invented URLs and
titles that are not their page's are contradictions too. The simulator re-asks with these named, then
:meth:`BibleLedger.repair` rewrites the offending lines from the bible (or, failing that, returns the
grounded answer). Limitation: a paraphrase that drops the label ("has 12,000 inhabitants") is not read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from agentworld.domains.actions import tool_call
from agentworld.domains.ledger import Contradiction, bounded
from agentworld.synth.fiction.bible import (
    Bible,
    BibleDocument,
    Entity,
    label,
    normalise,
    render_value,
    states,
)

_URL = re.compile(r"https?://[^\s)\]>\"']+")
_RESULT = re.compile(r"^\[(\d+)\] (\S+)\s*$")
_SENTENCE_END = re.compile(r"\.(?=\s|$)|;")

Truth = Callable[[str, dict[str, Any]], str]
"""The grounded answer of a tool call (name, arguments): what the bible's own tools return."""


class BibleFacts:
    """Lookup tables over a bible: entities by name, labels, documents by URL, subjects of documents."""

    def __init__(self, bible: Bible) -> None:
        self.bible = bible
        self.by_url = {bible.url(d): d for d in bible.documents}
        self.by_name = sorted(bible.entities, key=lambda e: -len(e.name))
        self.labels: dict[str, list[tuple[Entity, str]]] = {}
        for entity in bible.entities:
            for attribute in entity.attributes:
                self.labels.setdefault(label(attribute), []).append((entity, attribute))
        alternatives = "|".join(re.escape(lbl) for lbl in sorted(self.labels, key=len, reverse=True))
        self._label_re = re.compile(rf"(?<!\w)({alternatives})(?!\w)")
        self._name_res = [(e, re.compile(rf"(?<!\w){re.escape(e.name.lower())}(?!\w)")) for e in self.by_name]

    def subject(self, doc: BibleDocument | None) -> Entity | None:
        """The one entity a document is about (all its facts name it), else None."""
        ids = {f.entity for f in doc.facts} if doc is not None else set()
        return self.bible.entity(ids.pop()) if len(ids) == 1 else None

    def mentions(self, line: str) -> list[tuple[int, Entity]]:
        """(position, entity) of every entity name on ``line`` (longest names first, no overlaps)."""
        low, taken, out = line.lower(), [False] * (len(line) + 1), []
        for entity, pattern in self._name_res:
            for m in pattern.finditer(low):
                if not any(taken[m.start():m.end()]):
                    taken[m.start():m.end()] = [True] * (m.end() - m.start())
                    out.append((m.start(), entity))
        return sorted(out, key=lambda pair: pair[0])

    def line_conflicts(self, line: str, context: Entity | None) -> list[tuple[Entity, str]]:
        """(entity, attribute) of each fact ``line`` states otherwise than the bible."""
        low = normalise(line)
        names = self.mentions(low)
        spans = [(pos, pos + len(e.name)) for pos, e in names]
        found = [m for m in self._label_re.finditer(low) if not any(a <= m.start() < b for a, b in spans)]
        out: list[tuple[Entity, str]] = []
        for i, m in enumerate(found):
            end = found[i + 1].start() if i + 1 < len(found) else len(low)
            stop = _SENTENCE_END.search(low, m.end())
            window = low[m.start(): min(end, stop.end() if stop else end)]
            if window.rstrip().endswith("...") or window.rstrip().endswith("…"):
                continue  # a cut snippet: the value may lie beyond the cut
            having = {e.id for e, _ in self.labels[m.group(1)]}
            near = sorted(((abs(pos - m.start()), e) for pos, e in names if e.id in having),
                          key=lambda p: p[0])
            entity = near[0][1] if near else (context if context and context.id in having else None)
            if entity is None:
                continue
            attribute = next(a for e, a in self.labels[m.group(1)] if e.id == entity.id)
            if not states(window, entity.attributes[attribute]):
                out.append((entity, attribute))
        return out


def _contradiction(entity: Entity, attribute: str, line: str) -> Contradiction:
    value = render_value(entity.attributes[attribute])
    return Contradiction(kind="bible_fact", message=f"the {label(attribute)} of {entity.name} is {value} "
                         f"(the world's record), not as shown in: {line.strip()[:160]!r}",
                         expected=value, found=line.strip()[:300])


class BibleLedger:
    """The :class:`~agentworld.domains.ledger.Ledger` of a fictional search world (see the module docstring).

    Args:
        bible: the world's bible.
        truth: the grounded answer of a tool call, the repair of last resort.
    """

    def __init__(self, bible: Bible, truth: Truth | None = None) -> None:
        self.facts = BibleFacts(bible)
        self.truth = truth
        self.seen: dict[str, Entity] = {}

    def _lines(self, action: str, observation: str) -> list[tuple[str, Entity | None, BibleDocument | None]]:
        call = tool_call(action) or ("", {})
        url = str(call[1].get("url", "")).split("#", 1)[0]
        page = self.facts.by_url.get(url) if call[0] == "web_extractor" else None
        out: list[tuple[str, Entity | None, BibleDocument | None]] = []
        doc = page
        for line in observation.splitlines():
            m = _RESULT.match(line.strip())
            if m:
                doc = self.facts.by_url.get(m.group(2))
            out.append((line, self.facts.subject(doc), doc))
        return out

    def check(self, action: str, observation: str) -> list[Contradiction]:
        found: list[Contradiction] = []
        for url in dict.fromkeys(_URL.findall(observation)):
            if url.split("#", 1)[0] not in self.facts.by_url:
                found.append(Contradiction(kind="bible_url", message=f"{url} is not a page of this world",
                                           found=url))
        for line, subject, doc in self._lines(action, observation):
            stripped = line.strip()
            if stripped.startswith("Title:") and doc is not None and stripped[6:].strip() != doc.title:
                found.append(Contradiction(
                    kind="bible_title",
                    message=f"the page {self.facts.bible.url(doc)} is titled {doc.title!r}",
                    expected=doc.title, found=stripped[6:].strip()))
            found += [_contradiction(e, a, line) for e, a in self.facts.line_conflicts(line, subject)]
        return found

    def repair(self, action: str, observation: str, found: list[Contradiction]) -> str | None:
        """Lines that misstate a fact are rewritten from the bible; anything else unfixable (an invented
        URL) falls back to the grounded answer."""
        if not found:
            return None
        out = []
        for line, subject, doc in self._lines(action, observation):
            stripped = line.strip()
            if stripped.startswith("Title:") and doc is not None and stripped[6:].strip() != doc.title:
                line = line[: line.index("Title:")] + f"Title: {doc.title}"
            wrong = self.facts.line_conflicts(line, subject)
            if wrong:
                lead = re.match(r"^\s*(?:Snippet:\s*|- |\[\d+\]\s*)?", line)
                line = (lead.group(0) if lead else "") + " ".join(
                    f"The {label(a)} of {e.name} is {render_value(e.attributes[a])}." for e, a in wrong)
            out.append(line)
        fixed = "\n".join(out)
        if self.check(action, fixed) and self.truth is not None:
            call = tool_call(action)
            if call is not None:
                return self.truth(*call)
        return fixed if fixed != observation else None

    def update(self, action: str, observation: str) -> None:
        for _, entity in self.facts.mentions(observation):
            self.seen.setdefault(entity.id, entity)

    def summary(self) -> str:
        """The bible's facts about the entities this episode has shown (the record the answers must keep)."""
        lines = [f"{e.name} ({e.kind}): "
                 + "; ".join(f"{label(a)} {render_value(v)}" for a, v in e.attributes.items())
                 for e in self.seen.values()]
        return bounded(lines) if lines else ""


def document_problems(bible: Bible) -> list[str]:
    """Lines of the bible's documents that the ledger reads as misstating a fact (a document must pass
    the same check as every rendered answer)."""
    facts = BibleFacts(bible)
    out = []
    for doc in bible.documents:
        subject = facts.subject(doc)
        for n, line in enumerate(doc.text.splitlines(), 1):
            for entity, attribute in facts.line_conflicts(line, subject):
                out.append(f"document {doc.id} line {n}: states the {label(attribute)} of {entity.name} "
                           f"otherwise than the entity table ({render_value(entity.attributes[attribute])})")
    return out

"""Near-duplicate worlds: TF-IDF cosine over the scenario text, Jaccard over the tool names.

Why both: a generator that repeats itself writes the same service twice in other words (the text
is close, the tools are the same), while two worlds grown from one seed share their tools but not
their story. The score is ``text_weight · cosine + (1 − text_weight) · jaccard``; a world whose
score against an earlier kept world reaches the threshold is a duplicate of it (the first is kept).
Candidates come from an inverted index, so only worlds sharing a word or a tool are compared.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Scenario:
    """What is compared of one world: its scenario text and its tool names."""

    text: str
    tools: frozenset[str]


@dataclass(frozen=True)
class Duplicate:
    """World ``index`` repeats the kept world ``of`` with this combined ``similarity``."""

    index: int
    of: int
    similarity: float
    text: float
    tools: float


def _features(text: str) -> Counter[str]:
    words = _WORD.findall(text.lower())
    grams: Counter[str] = Counter(words)
    grams.update(f"{a} {b}" for a, b in itertools.pairwise(words))
    return grams


def _vectors(texts: Sequence[str]) -> list[dict[str, float]]:
    counts = [_features(t) for t in texts]
    df: Counter[str] = Counter(f for c in counts for f in c)
    n = len(texts)
    out = []
    for c in counts:
        vec = {f: (1 + math.log(k)) * math.log((1 + n) / (1 + df[f]) + 1) for f, k in c.items()}
        size = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        out.append({f: v / size for f, v in vec.items()})
    return out


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def find_duplicates(items: Sequence[Scenario], threshold: float, text_weight: float = 0.5) -> list[Duplicate]:
    """The items that repeat an earlier kept item (in order; the first of a group is kept).

    >>> a = Scenario("An airline desk: book and cancel flights", frozenset({"book", "cancel"}))
    >>> b = Scenario("an airline desk - book and cancel flights!", frozenset({"book", "cancel"}))
    >>> c = Scenario("A library catalogue for loans", frozenset({"search_books"}))
    >>> [(d.index, d.of) for d in find_duplicates([a, b, c], 0.9)]
    [(1, 0)]
    """
    vectors = _vectors([s.text for s in items])
    postings: dict[str, list[int]] = defaultdict(list)
    found: list[Duplicate] = []
    for i, (item, vec) in enumerate(zip(items, vectors, strict=True)):
        dots: dict[int, float] = defaultdict(float)
        for f, v in vec.items():
            for j in postings.get(f, ()):
                dots[j] += v * vectors[j][f]
        candidates = set(dots) | {j for t in item.tools for j in postings.get(f"\0tool:{t}", ())}
        best: Duplicate | None = None
        for j in sorted(candidates):
            text, tools = dots.get(j, 0.0), jaccard(item.tools, items[j].tools)
            score = text_weight * text + (1 - text_weight) * tools
            if score >= threshold and (best is None or score > best.similarity):
                best = Duplicate(i, j, round(score, 4), round(text, 4), round(tools, 4))
        if best is not None:
            found.append(best)
            continue
        for f in vec:
            postings[f].append(i)
        for t in item.tools:
            postings[f"\0tool:{t}"].append(i)
    return found

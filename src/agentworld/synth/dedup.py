"""Near-duplicate worlds: TF-IDF cosine over the scenario text, Jaccard over the tool names.

Why both: a generator that repeats itself writes the same service twice in other words (the text
is close, the tools are the same), while two worlds grown from one seed share their tools but not
their story. The score is ``text_weight · cosine + (1 − text_weight) · jaccard``; a world whose
score against an earlier kept world reaches the threshold is a duplicate of it (the first is kept).
Candidates come from an inverted index of each kept world's rarest words (prefix filtering), so a
world is compared only with the few that could reach the threshold.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
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
    need = (threshold - (1 - text_weight)) / text_weight if text_weight else -1.0  # text cosine even equal
    df: Counter[str] = Counter(f for v in vectors for f in v)
    postings: dict[str, list[int]] = defaultdict(list)
    kept: list[int] = []
    found: list[Duplicate] = []
    for i, (item, vec) in enumerate(zip(items, vectors, strict=True)):
        if need <= 0:
            candidates: Iterable[int] = kept
        else:
            candidates = sorted({j for f in vec for j in postings.get(f, ())})
        best: Duplicate | None = None
        top = -1.0
        for j in candidates:
            text = _dot(vec, vectors[j])
            if text < need - 1e-9:
                continue
            tools = jaccard(item.tools, items[j].tools)
            score = text_weight * text + (1 - text_weight) * tools
            if score >= threshold - 1e-9 and score > top:
                top, best = score, Duplicate(i, j, round(score, 4), round(text, 4), round(tools, 4))
        if best is not None:
            found.append(best)
            continue
        kept.append(i)
        if need > 0:
            for f in _prefix(vec, df, need):
                postings[f].append(i)
    return found


def _dot(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(f, 0.0) for f, v in a.items())


def _prefix(vec: dict[str, float], df: Counter[str], need: float) -> list[str]:
    """The rarest features of ``vec`` whose rest has a norm below ``need`` (prefix filtering).

    Why it is enough to index these: if two vectors share none of one's prefix features, their
    cosine is at most the norm of that one's rest, below ``need``. Rare features have short
    postings, so a query meets few candidates instead of every world sharing a common word.
    """
    order = sorted(vec, key=lambda f: (df[f], f))
    rest = sum(v * v for v in vec.values())
    out = []
    for f in order:
        if rest < need * need - 1e-12:
            break
        out.append(f)
        rest -= vec[f] * vec[f]
    return out

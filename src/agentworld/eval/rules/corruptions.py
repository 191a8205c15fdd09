"""Wrong observations made from true ones: wholesale corruption and small, plausible errors.

Both are drawn from seeded hashes (:func:`hash_uniform`), so the mock server (which serves them as a
bad world model's answers) and the evaluation contract (which scores them) agree on every draw.

:func:`corrupt_observation` rewrites most of an observation, so a score that only catches wholesale
errors passes it. A world model that has learnt the format gets *one* thing wrong: a test count,
a title, the order of two results, one line too many or too few. Each of the small kinds
(:data:`KINDS`) makes exactly one such change, chosen by a seeded hash of a token, so the contract
(:mod:`agentworld.eval.rules.contract`) can ask that ``verified`` (the GSPO rule reward) rejects them.
A change counts only where it changes what the observation says: not inside runtime metadata (a
time, a duration, a commit id may differ between two runs of the same action) and not a reordering
of a JSON object's keys. A kind returns None where it has nothing to change.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from agentworld.domains.rules import runtime_units
from agentworld.schema import OBSERVATION_MARKER, strip_marker

Corruption = Callable[[str, str], "str | None"]
T = TypeVar("T")

_DIGITS = re.compile(r"\d+")
_WORD = re.compile(r"[A-Za-z]{3,}")
ERROR_LINE = "Error: operation failed"


_WRONG_WORDS = ("error", "denied", "missing", "unknown", "timeout", "invalid", "stopped", "null",
                "blocked", "pending", "empty", "failed", "offline", "refused")
_FAKE_LINES = ("bash: syntax error near unexpected token", "Error: resource not found",
               "Permission denied", '{"status": "error", "code": 503}', "Segmentation fault (core dumped)",
               "No results found.", "Connection reset by peer")


def hash_uniform(*parts: object) -> float:
    """A uniform number in [0, 1) fixed by ``parts``: the same inputs give the same draw anywhere."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


# -- wholesale corruption (the mock server's bad world model) ------------------------------------

def _mutate_line(line: str, rng: random.Random) -> str:
    new = re.sub(r"\d", lambda m: str((int(m.group()) + rng.randint(1, 9)) % 10), line)
    new = re.sub(r"[A-Za-z]{3,}",
                 lambda m: rng.choice(_WRONG_WORDS) if rng.random() < 0.5 else m.group(), new)
    return new if new != line else rng.choice(_FAKE_LINES)


def corrupt_observation(text: str, token: str) -> str:
    """A plausible but wrong version of an observation, fixed by ``token``.

    Most content lines are changed (digits and words replaced), a line may be dropped, two lines
    swapped and a wrong line inserted; the observation marker is kept so the format still looks
    right and only the content is wrong — what a judge and the rule tier should catch.
    """
    rng = random.Random(token)
    lines = text.split("\n")
    head: list[str] = []
    if lines and lines[0].startswith(OBSERVATION_MARKER):
        rest = lines[0][len(OBSERVATION_MARKER):].strip()
        head = [OBSERVATION_MARKER]
        lines = ([rest] if rest else []) + lines[1:]
    content = [i for i, line in enumerate(lines) if line.strip()]
    changed: set[int] = set()
    for i in content:
        if rng.random() < 0.85:
            lines[i] = _mutate_line(lines[i], rng)
            changed.add(i)
    for i in content:
        if len(changed) * 3 >= len(content) * 2:
            break
        if i not in changed:
            lines[i] = _mutate_line(lines[i], rng)
            changed.add(i)
    if len(lines) > 3:
        del lines[rng.randrange(len(lines))]
    if len(lines) >= 2:
        i, j = rng.sample(range(len(lines)), 2)
        lines[i], lines[j] = lines[j], lines[i]
    lines.insert(rng.randrange(len(lines) + 1), rng.choice(_FAKE_LINES))
    return "\n".join(head + lines)


def _meaning(text: str) -> object:
    """What two runs of the same action must agree on: a JSON value, else the lines with runtime
    metadata masked and spacing normalised."""
    body = strip_marker(text).strip()
    try:
        return json.loads(body)
    except ValueError:
        return runtime_units([x for x in body.splitlines() if x.strip()])


def _split(text: str) -> tuple[str, list[str]]:
    """The marker prefix (kept as is) and the lines after it."""
    if text.startswith(OBSERVATION_MARKER):
        return OBSERVATION_MARKER, text[len(OBSERVATION_MARKER):].split("\n")
    return "", text.split("\n")


def _content(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if line.strip()]


def _first_change(text: str, candidates: Iterator[str]) -> str | None:
    """The first candidate that says something else than ``text`` (see :func:`_meaning`)."""
    truth = _meaning(text)
    return next((c for c in candidates if _meaning(c) != truth), None)


def _shuffled(items: Iterable[T], rng: random.Random) -> list[T]:
    out = list(items)
    rng.shuffle(out)
    return out


def changed_number(text: str, token: str) -> str | None:
    """One number in one line changed (a test count, an exit code, a total, a size, an id)."""
    rng = random.Random(f"number:{token}")
    head, lines = _split(text)
    spots = [(i, m.start(), m.end()) for i in _content(lines) for m in _DIGITS.finditer(lines[i])]

    def candidates() -> Iterator[str]:
        for i, start, end in _shuffled(spots, rng):
            value = int(lines[i][start:end])
            new = str(value + rng.choice((1, 2, 7)) if value < 10 or rng.random() < 0.5 else value - 1)
            changed = [*lines[:i], lines[i][:start] + new + lines[i][end:], *lines[i + 1:]]
            yield head + "\n".join(changed)
    return _first_change(text, candidates())


def dropped_line(text: str, token: str) -> str | None:
    """One non-blank line left out (a result, an entry, a line of output)."""
    rng = random.Random(f"drop:{token}")
    head, lines = _split(text)
    spots = _content(lines)
    if len(spots) < 2:
        return None
    return _first_change(text, (head + "\n".join(lines[:i] + lines[i + 1:])
                                for i in _shuffled(spots, rng)))


def swapped_lines(text: str, token: str) -> str | None:
    """Two neighbouring non-blank lines swapped (two results, two entries in the wrong order)."""
    rng = random.Random(f"swap:{token}")
    head, lines = _split(text)
    spots = _content(lines)

    def candidates() -> Iterator[str]:
        for a, b in _shuffled(itertools.pairwise(spots), rng):
            swapped = list(lines)
            swapped[a], swapped[b] = swapped[b], swapped[a]
            yield head + "\n".join(swapped)
    return _first_change(text, candidates())


def changed_word(text: str, token: str) -> str | None:
    """One word of one line replaced by another word of the observation (a title, a name, a path)."""
    rng = random.Random(f"word:{token}")
    head, lines = _split(text)
    spots = [(i, m.start(), m.end()) for i in _content(lines) for m in _WORD.finditer(lines[i])]
    words = sorted({lines[i][a:b] for i, a, b in spots})

    def candidates() -> Iterator[str]:
        for i, start, end in _shuffled(spots, rng):
            other = rng.choice([w for w in words if w != lines[i][start:end]] or [lines[i][start:end]])
            yield head + "\n".join([*lines[:i], lines[i][:start] + other + lines[i][end:], *lines[i + 1:]])
    return _first_change(text, candidates())


def middle_reversed_or_error(text: str, token: str) -> str | None:
    """The middle line's characters reversed; an extra error line where that changes nothing."""
    del token
    head, lines = _split(text)
    spots = _content(lines)
    middle = spots[len(spots) // 2] if spots else None
    flipped = [] if middle is None else [head + "\n".join(
        [*lines[:middle], lines[middle][::-1], *lines[middle + 1:]])]
    return _first_change(text, iter([*flipped, head + "\n".join([*lines, ERROR_LINE])]))


KINDS: dict[str, Corruption] = {"changed_number": changed_number, "dropped_line": dropped_line,
                                "swapped_lines": swapped_lines, "changed_word": changed_word,
                                "reversed_or_error": middle_reversed_or_error}
"""Every one-change corruption by name; the contract applies each to every sample it applies to."""

"""Runtime metadata in observations: typed tokens, masking, and format/range checks.

The official judge prompts say runtime metadata (timestamps, PIDs, ids, sizes, speeds) can only be
checked for format and range: a simulated ``ls -l`` cannot know the real mtime. So before lines
are compared, such tokens are replaced by typed placeholders (``<TS>``, ``<PID>``, ``<HEX>``,
``<UUID>``, ``<SIZE>``, ``<DUR>``, ``<SPEED>``) in both texts, and the prediction's tokens are
checked separately for plausibility against the ground truth's.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from dataclasses import dataclass

_MON = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_UNITS = {"": 1.0, "b": 1.0, "byte": 1.0, "bytes": 1.0, "k": 1e3, "kb": 1e3, "kib": 1024.0, "m": 1e6,
          "mb": 1e6, "mib": 1024.0**2, "g": 1e9, "gb": 1e9, "gib": 1024.0**3, "t": 1e12, "tb": 1e12,
          "tib": 1024.0**4}
_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0,
            "seconds": 1.0, "min": 60.0}

# (kind, pattern, group holding the token); applied in order, each on the text left by the previous.
_PATTERNS: tuple[tuple[str, re.Pattern[str], int], ...] = (
    ("UUID", re.compile(r"\b[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b"), 0),
    ("TS", re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
                      r"(?:Z|[+-]\d{2}:?\d{2})?)?"), 0),
    ("TS", re.compile(rf"\b(?:{_DAY},? +)?{_MON} +\d{{1,2}},? +(?:\d{{1,2}}:\d{{2}}(?::\d{{2}})?"
                      rf"(?: +[A-Z]{{2,5}})?(?: +\d{{4}})?|\d{{4}})\b"), 0),
    ("TS", re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b"), 0),
    ("TS", re.compile(r"\b\d{1,2}:\d{2}\b"), 0),
    ("TS", re.compile(r"\b1[4-9]\d{8}(?:\.\d+)?\b"), 0),
    ("HEX", re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,64}\b"), 0),
    ("PID", re.compile(r"\b(?:pid|PID|process|Process)[ =:#]+(\d+)"), 1),
    ("PID", re.compile(r"^\[\d+\][+-]?\s+(\d+)\s*$", re.M), 1),
    ("PID", re.compile(r"^\S+\s+(\d+)(?=\s+\d+\.\d\s+\d+\.\d\s)", re.M), 1),
    ("PID", re.compile(r"^\s*(\d+)(?=\s+(?:pts/\d+|tty\d*|\?)\s)", re.M), 1),
    ("SPEED", re.compile(r"\b\d+(?:\.\d+)?\s?(?:[kKMGT]i?B|[kKMG]b|B|it)/s\b"), 0),
    ("DUR", re.compile(r"\b\d+m\d+(?:\.\d+)?s\b|\b\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s|sec|secs|seconds)\b"), 0),
    ("SIZE", re.compile(r"\b\d+(?:\.\d+)?\s?(?:[KMGT]i?B|[kKMGT]|bytes|B)\b"), 0),
    ("SIZE", re.compile(r"^[-dlcbps][rwxsStT-]{9}[.+@]?\s+\d+\s+\S+\s+\S+\s+(\d+)", re.M), 1),
    ("SIZE", re.compile(r"^total (\d+)$", re.M), 1),
)


@dataclass(frozen=True)
class Token:
    kind: str
    value: str


@dataclass(frozen=True)
class Masked:
    """Text with metadata replaced by ``<KIND>`` placeholders, and the tokens that were replaced."""

    text: str
    tokens: tuple[Token, ...]


RUNTIME_KINDS: frozenset[str] = frozenset({"UUID", "TS", "HEX", "PID", "SPEED", "DUR"})
"""The kinds that change from one run of the same action to the next. Sizes are not among them: the
size of a file the session wrote, a ``total`` line or a byte count is content a verdict must check."""


def mask(text: str, kinds: frozenset[str] | None = None) -> Masked:
    """Replace runtime-metadata tokens (of ``kinds``; default every kind) by typed placeholders.

    >>> mask("root@ad092d3df69c:/app# sleep 1 & echo done at 12:00:01").text
    'root@<HEX>:/app# sleep 1 & echo done at <TS>'
    >>> mask("4.0K notes.txt in 0.5s", RUNTIME_KINDS).text
    '4.0K notes.txt in <DUR>'

    Lines are cached (the result is frozen): scoring masks the same history lines once per rule,
    baseline and corrupted prediction, so a corpus check would otherwise run the patterns millions of
    times. Longer texts (whole observations) are masked afresh, so the cache stays small.
    """
    if len(text) > _CACHED_CHARS:
        return _mask.__wrapped__(text, kinds)
    return _mask(text, kinds)


_CACHED_CHARS = 2048
"""Texts up to this length are cached (at most 32,768 of them: a few MB for typical lines)."""


@functools.lru_cache(maxsize=1 << 15)
def _mask(text: str, kinds: frozenset[str] | None) -> Masked:
    found: list[Token] = []
    for kind, pattern, group in _PATTERNS:
        if kinds is not None and kind not in kinds:
            continue
        def sub(m: re.Match[str], kind: str = kind, group: int = group) -> str:
            found.append(Token(kind, m.group(group)))
            start, end = m.start(group) - m.start(), m.end(group) - m.start()
            whole = m.group(0)
            return whole[:start] + f"<{kind}>" + whole[end:]
        text = pattern.sub(sub, text)
    return Masked(text, tuple(found))


def _number(value: str, units: dict[str, float]) -> float | None:
    m = re.match(r"(\d+(?:\.\d+)?)\s?([A-Za-zµ]*)", value)
    if not m:
        return None
    unit = m.group(2).lower()
    return float(m.group(1)) * units[unit] if unit in units else None


def _quantity(kind: str, value: str) -> float | None:
    if kind == "SIZE":
        return _number(value, _UNITS)
    if kind == "SPEED":
        return _number(value.rsplit("/", 1)[0].replace("it", ""), _UNITS)
    m = re.fullmatch(r"(\d+)m(\d+(?:\.\d+)?)s", value)
    if m:
        return int(m.group(1)) * 60 + float(m.group(2))
    return _number(value, _SECONDS)


def timestamp_ok(value: str) -> bool:
    """True if every date/time field of a timestamp is in range (month 1–12, hour < 24, …)."""
    m = re.search(r"(\d{4})-(\d{2})-(\d{2})", value)
    if m and not (1970 <= int(m.group(1)) <= 2100 and 1 <= int(m.group(2)) <= 12
                  and 1 <= int(m.group(3)) <= 31):
        return False
    m = re.search(rf"{_MON} +(\d{{1,2}})", value)
    if m and not 1 <= int(m.group(1)) <= 31:
        return False
    m = re.search(r"(\d{1,2}):(\d{2})(?::(\d{2}))?", value)
    return not m or (int(m.group(1)) < 24 and int(m.group(2)) < 60 and int(m.group(3) or 0) < 61)


def token_ok(token: Token, truth: list[Token]) -> bool:
    """Whether a predicted token is plausible given the ground truth's tokens of the same kind.

    A value the truth itself holds is plausible by definition: the environment printed it, even
    where the format check below would not parse it (a date-only string, an unusual layout).
    """
    if any(token.value == t.value for t in truth):
        return True
    if token.kind == "TS":
        return timestamp_ok(token.value)
    if token.kind == "PID":
        return 1 <= int(token.value) <= 4_194_304
    if token.kind == "HEX":
        return len(token.value) in {len(t.value) for t in truth}
    if token.kind == "UUID":
        return True
    value = _quantity(token.kind, token.value)
    known = [q for q in (_quantity(t.kind, t.value) for t in truth) if q is not None]
    if value is None or value < 0:
        return False
    if not known:
        return True
    return min(known) / 1000 <= value <= max(known) * 1000 or value == 0 == min(known)


@dataclass(frozen=True)
class MetadataCheck:
    """Per-kind result of :func:`check_metadata`; ``score`` is 0–100 or None when the truth has none."""

    score: float | None
    per_kind: dict[str, float]


def check_metadata(prediction: Masked, truth: Masked) -> MetadataCheck:
    """Score the prediction's metadata where the truth has some: right kinds, counts and ranges.

    Per kind: valid predicted tokens (capped at the truth's count) over the larger of the two counts,
    so a missing timestamp, an extra one or an impossible ``25:61:00`` all cost.
    """
    by_truth: dict[str, list[Token]] = defaultdict(list)
    by_pred: dict[str, list[Token]] = defaultdict(list)
    for t in truth.tokens:
        by_truth[t.kind].append(t)
    for t in prediction.tokens:
        by_pred[t.kind].append(t)
    per_kind: dict[str, float] = {}
    for kind, truth_tokens in by_truth.items():
        preds = by_pred.get(kind, [])
        valid = sum(token_ok(t, truth_tokens) for t in preds)
        per_kind[kind] = 100.0 * min(valid, len(truth_tokens)) / max(len(truth_tokens), len(preds))
    if not per_kind:
        return MetadataCheck(None, {})
    return MetadataCheck(sum(per_kind.values()) / len(per_kind), per_kind)

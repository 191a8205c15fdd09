"""Reading model output: thinking removal, tag extraction, and defensive judge-JSON parsing.

Semantics follow the official AgentWorldBench harness: remove ``<think>`` blocks (a lone
``</think>`` drops everything before it; an unclosed ``<think>`` runs to the response tag or the
end), then take the *last* ``<tag>`` block (to its closing tag or the end); with no tag, the
stripped text; with nothing at all, ``"No output"``.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

NO_OUTPUT = "No output"
SCORE_DIMENSIONS: tuple[str, ...] = ("format", "factuality", "consistency", "realism", "quality")

_OPEN = re.compile(r"<think>", re.IGNORECASE)
_CLOSE = re.compile(r"</think>", re.IGNORECASE)


def split_thinking(text: str, response_tag: str | None = None) -> tuple[str, str]:
    """Return ``(text without thinking, the thinking removed)``."""
    if not text:
        return text, ""
    events = sorted([(m.start(), "open") for m in _OPEN.finditer(text)]
                    + [(m.start(), "close") for m in _CLOSE.finditer(text)])
    if not events:
        return text, ""
    used: set[int] = set()
    spans: list[tuple[int, int]] = []
    for i, (pos, kind) in enumerate(events):
        if kind != "open" or i in used:
            continue
        for j in range(i + 1, len(events)):
            if j not in used and events[j][1] == "close":
                spans.append((pos, events[j][0] + len("</think>")))
                used.update((i, j))
                break
    for i, (pos, kind) in enumerate(events):
        if kind == "close" and i not in used:
            spans.append((0, pos + len("</think>")))
            used.add(i)
    for i, (pos, kind) in enumerate(events):
        if kind == "open" and i not in used:
            end = len(text)
            if response_tag:
                m = re.search(rf"<{re.escape(response_tag)}>", text[pos:], re.IGNORECASE)
                if m:
                    end = pos + m.start()
            spans.append((pos, end))
            used.add(i)
    spans.sort()
    merged: list[tuple[int, int]] = []
    for s, e in spans:
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    kept, removed, prev = [], [], 0
    for s, e in merged:
        kept.append(text[prev:s])
        removed.append(text[s:e])
        prev = e
    kept.append(text[prev:])
    thinking = "".join(removed)
    thinking = _OPEN.sub("", _CLOSE.sub("", thinking)).strip()
    return "".join(kept).strip(), thinking


def remove_thinking(text: str, response_tag: str | None = None) -> str:
    return split_thinking(text, response_tag)[0]


def extract_tag(text: str, tag: str) -> str | None:
    """The content of the last ``<tag>`` block (to its close or the end), or None if absent."""
    matches = list(re.finditer(rf"<{re.escape(tag)}>", text, re.IGNORECASE))
    if not matches:
        return None
    start = matches[-1].end()
    close = re.search(rf"</{re.escape(tag)}>", text[start:], re.IGNORECASE)
    return (text[start:start + close.start()] if close else text[start:]).strip()


def parse_prediction(raw: str, response_tag: str = "predicted_observation") -> str:
    """The world model's prediction as the official harness extracts it."""
    if not raw:
        return NO_OUTPUT
    cleaned = remove_thinking(raw, response_tag)
    found = extract_tag(cleaned, response_tag)
    if found is None:
        return cleaned.strip() or NO_OUTPUT
    return found


class JudgeVerdict(BaseModel):
    """A parsed rubric verdict; ``total_score`` is the mean of the non-zero dimension scores (1–5)."""

    model_config = ConfigDict(frozen=True)

    scores: dict[str, int]
    strengths: list[str] = Field(default_factory=list)
    weaknesses: list[str] = Field(default_factory=list)

    @property
    def total_score(self) -> float:
        vals = [v for v in self.scores.values() if v]
        return sum(vals) / len(vals) if vals else 0.0


class JudgeParseError(ValueError):
    """The judge's reply held no usable verdict."""


def _loose_json(text: str) -> Any:
    import json

    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    fixed = re.sub(r",\s*([}\]])", r"\1", text)
    fixed = re.sub(r"([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:", r'\1"\2":', fixed)
    fixed = re.sub(r"'", '"', fixed) if '"' not in fixed else fixed
    fixed = re.sub(r"//[^\n]*", "", fixed)
    return json.loads(fixed)


def _json_candidates(text: str) -> list[str]:
    out = [m.group(1) for m in re.finditer(r"```(?:json)?\s*(.*?)```", text, re.S | re.I)]
    depth, start = 0, -1
    for i, ch in enumerate(text):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                out.append(text[start:i + 1])
    return out


def parse_judge(raw: str, tag: str = "final_evaluation") -> JudgeVerdict:
    """Parse a rubric verdict defensively.

    Accepts JSON in or out of a fence, inside the tag or (failing that) anywhere after thinking,
    with trailing commas, unquoted keys or comments. Scores must be integers 1–5 (numeric strings
    and floats that are whole numbers are accepted); 0 marks a dimension as not scored.
    """
    text = remove_thinking(raw or "", tag)
    region = extract_tag(text, tag)
    candidates = _json_candidates(region) if region is not None else []
    candidates += _json_candidates(text)
    for cand in reversed(candidates) if region is None else candidates:
        try:
            data = _loose_json(cand)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("scores"), dict):
            return _verdict(data)
    raise JudgeParseError("no JSON verdict with a 'scores' object found")


def _verdict(data: dict[str, Any]) -> JudgeVerdict:
    scores: dict[str, int] = {}
    raw_scores = {str(k).lower(): v for k, v in data["scores"].items()}
    for dim in SCORE_DIMENSIONS:
        value = raw_scores.get(dim, 0)
        try:
            num = float(value)
        except (TypeError, ValueError):
            raise JudgeParseError(f"score {dim!r} is not a number: {value!r}") from None
        if num != int(num) or not 0 <= num <= 5:
            raise JudgeParseError(f"score {dim!r} out of range 1-5: {value!r}")
        scores[dim] = int(num)
    if not any(scores.values()):
        raise JudgeParseError("every score is missing or zero")
    as_list = lambda v: [str(x) for x in v] if isinstance(v, list) else ([str(v)] if v else [])  # noqa: E731
    return JudgeVerdict(scores=scores, strengths=as_list(data.get("strengths")),
                        weaknesses=as_list(data.get("weaknesses")))


def parse_choice(raw: str) -> str | None:
    r"""The last ``\boxed{A}``/``\boxed{B}`` answer of a Turing or reference-comparison judge."""
    text = remove_thinking(raw or "")
    found = re.findall(r"\\boxed\{\s*\**\s*([AB])\s*\**\s*\}", text)
    return found[-1] if found else None

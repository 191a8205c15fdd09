"""The domain-free half of rule scoring: what a domain's rules are made of, and the generic rules.

Content follows the official judge prompts' three tiers: *deterministic* content (the command
echo, computation results, reads of files written earlier in the session) must match exactly;
*pre-existing environment* content (listings, versions) only looks plausible; *runtime metadata*
(timestamps, PIDs, ids, sizes, speeds) is checked for format and range. Each domain's plugin names a
small :class:`DomainRules` (how to cut a text into comparable units, how to classify them, how to
check structure, which units are *frame*, and what a predictor that knows only the frame writes);
domains without one use :data:`GENERIC`. The scoring itself is :mod:`agentworld.eval.rules.scores`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from agentworld.domains.actions import PROMPT_RE
from agentworld.domains.base import DomainPlugin, plugin_of, resolve
from agentworld.domains.content import RUNTIME_KINDS, mask
from agentworld.errors import AgentWorldError
from agentworld.schema import BenchSample, strip_marker

Tier = Literal["deterministic", "environment", "metadata"]

MAX_SCORED_CHARS = 200_000
"""The most characters of one text the rule tier compares: of a prediction, of its ground truth, and of
the session's earlier turns together (the latest kept). Observations run to a few thousand characters
(the shipped corpora's longest is under 6,000); what the rule tier does per line (masking runtime
metadata, classifying, counting) made one 200 MB row cost minutes, so past this a score says it was
capped (``RuleScore.capped_at``) instead."""


def cut(text: str, limit: int | None = None) -> str:
    """The first ``limit`` (default :data:`MAX_SCORED_CHARS`) characters of ``text``, ended at the last
    line break within them (so no line is torn) unless there is none; ``text`` itself when not longer."""
    limit = MAX_SCORED_CHARS if limit is None else limit
    if len(text) <= limit:
        return text
    end = text.rfind("\n", 0, limit)
    return text[:end] if end > 0 else text[:limit]


@dataclass(frozen=True)
class Session:
    """What a classifier may know about the sample: current action and earlier turns."""

    domain: str
    action: str = ""
    history: tuple[tuple[str, str], ...] = ()
    cut: bool = False
    """Whether the earlier turns were longer than :data:`MAX_SCORED_CHARS` together (the latest kept)."""

    @classmethod
    def of(cls, domain: str, sample: BenchSample | None) -> Session:
        """The sample's session, at most :data:`MAX_SCORED_CHARS` of its earlier turns (the latest)."""
        if sample is None:
            return cls(domain)
        budget, kept = MAX_SCORED_CHARS, []
        history = sample.history()
        for action, observation in reversed(history):
            if budget <= 0:
                break
            kept.append((cut(action, budget), cut(observation, max(budget - len(action), 0))))
            budget -= len(action) + len(observation)
        was_cut = budget < 0 or len(kept) < len(history) or len(sample.action) > MAX_SCORED_CHARS
        return cls(domain, cut(sample.action), tuple(reversed(kept)), was_cut)

    def seen(self) -> frozenset[str]:
        """Masked, normalised lines of every earlier action and observation."""
        texts = [a for a, _ in self.history] + [o for _, o in self.history] + [self.action]
        return frozenset(norm(mask(x).text) for t in texts for x in clean(t).splitlines() if x.strip())


def no_frame(units: list[str], _: Session) -> list[bool]:
    """Every unit is content (domains whose observations have no fixed frame)."""
    return [False] * len(units)


def empty_frame(_truth: str, _session: Session) -> str:
    """The frame-only prediction of a domain without a frame: nothing."""
    return ""


@dataclass(frozen=True)
class DomainRules:
    """A domain's rules: units to compare, their tiers, a structure check (0–100), which units are
    frame, and the frame-only prediction (it may read the truth's *shape*, never its content)."""

    units: Callable[[str], list[str]]
    classify: Callable[[list[str], Session], list[Tier]]
    structure: Callable[[str, str, Session], tuple[float, dict[str, float]]]
    frame: Callable[[list[str], Session], list[bool]] = no_frame
    frame_only: Callable[[str, Session], str] = empty_frame
    verdict: Callable[[list[str]], list[str]] = lambda units: runtime_units(units)
    """The units as the 0/1 verdict compares them (equal lists: verified). Default
    :func:`runtime_units`: in order, with what changes between two runs of an action masked."""


def norm(line: str) -> str:
    return " ".join(line.split())


def clean(text: str) -> str:
    return strip_marker(text)


def lines_of(text: str) -> list[str]:
    return [norm(x) for x in text.splitlines() if x.strip()]


def runtime_units(units: list[str], kinds: frozenset[str] = RUNTIME_KINDS) -> list[str]:
    """Units with only what changes between two runs of the same action masked (times, durations, ids,
    pids, speeds; :data:`~agentworld.domains.content.RUNTIME_KINDS`) and spacing normalised: two
    observations whose runtime units are equal say the same thing."""
    return [norm(mask(u, kinds).text) for u in units]


def multiset_f1(pred: list[str], truth: list[str]) -> float:
    if not pred and not truth:
        return 100.0
    common = sum((Counter(pred) & Counter(truth)).values())
    return 0.0 if not common else 100.0 * 2 * common / (len(pred) + len(truth))


def ratio(a: int, b: int) -> float:
    """How close two counts are: 1 when equal, else the smaller over the larger."""
    return 1.0 if a == b else min(a, b) / max(a, b)


def is_metadata(unit: str) -> bool:
    """Whether a unit is runtime metadata and little else (a timestamp, a PID, a size …)."""
    masked = mask(unit).text
    return masked != unit and len(re.sub(r"<[A-Z]+>|[\W_]", "", masked)) < 3


# -- generic rules ---------------------------------------------------------------------------------

def generic_tiers(units: list[str], session: Session) -> list[Tier]:
    """Metadata-only units are metadata; units already seen in the session are deterministic."""
    seen = session.seen()
    return ["metadata" if is_metadata(u) else "deterministic" if norm(mask(u).text) in seen
            else "environment" for u in units]


_SHAPES = (("hunk", r"^@@"), ("diff", r"^[+-](?![+-])"), ("lineno", r"^\s*\d+[\t:|]"),
           ("rule", r"^[=\-#*]{3,}"), ("error", r"(?i)traceback|error|exception"),
           ("test", r"(?i)\b(passed|failed|ok)\b"), ("json", r"^\s*[\[{\]}]"), ("prompt", PROMPT_RE.pattern))


def _shape(line: str) -> str:
    return next((name for name, pat in _SHAPES if re.search(pat, line)), "text")


def shape_structure(pred: str, truth: str, _: Session) -> tuple[float, dict[str, float]]:
    """Line shapes (diff, numbered source, test summary, error, prompt, text) and line count."""
    p, t = lines_of(pred), lines_of(truth)
    checks = {"shapes": multiset_f1([_shape(x) for x in p], [_shape(x) for x in t]) / 100,
              "line_count": ratio(len(p), len(t))}
    return 100 * (0.7 * checks["shapes"] + 0.3 * checks["line_count"]), checks


GENERIC = DomainRules(lines_of, generic_tiers, shape_structure)
"""The rules of a domain whose plugin names none: lines, seen-before tiers, line shapes."""


# -- GUI trees (shared by the GUI domains) ---------------------------------------------------------

def _role(line: str) -> str:
    depth = (len(line) - len(line.lstrip())) // 2
    word = re.search(r"[A-Za-z][\w-]*", re.sub(r"\[[^\]]*\]|^[\s\-*|+`]+", "", line))
    return f"{min(depth, 8)}:{word.group(0).lower() if word else '?'}"


def tree_structure(pred: str, truth: str, _: Session) -> tuple[float, dict[str, float]]:
    """Accessibility-tree shape: (depth, role) of each node line, and node count."""
    p = [x for x in clean(pred).splitlines() if x.strip()]
    t = [x for x in clean(truth).splitlines() if x.strip()]
    checks = {"roles": multiset_f1([_role(x) for x in p], [_role(x) for x in t]) / 100,
              "node_count": ratio(len(p), len(t))}
    return 100 * (0.7 * checks["roles"] + 0.3 * checks["node_count"]), checks


TREE_RULES = DomainRules(lines_of, generic_tiers, tree_structure)
"""Lines, generic tiers and accessibility-tree structure (the GUI domains)."""


def rules_for(domain: str | DomainPlugin) -> tuple[DomainRules, bool]:
    """The rules ``domain``'s plugin names, and whether they are its own (else :data:`GENERIC`, False)."""
    found = plugin_of(domain)
    if found.rules is None:
        return GENERIC, False
    rules = resolve(found.rules)
    if not isinstance(rules, DomainRules):
        raise AgentWorldError(f"domain {found.name!r}: its plugin's rules {found.rules} are not a "
                              "DomainRules")
    return rules, True

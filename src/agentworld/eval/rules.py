"""Rule-based scores beside the rubric judge: exact match, line F1, content tiers and structure.

Judge-free and deterministic, so they are cheap to recompute and cannot drift with a judge model.
Content follows the official judge prompts' three tiers: *deterministic* content (the command
echo, computation results, reads of files written earlier in the session) must match exactly;
*pre-existing environment* content (listings, versions) only looks plausible; *runtime metadata*
(timestamps, PIDs, ids, sizes, speeds) is checked for format and range. Each domain registers a
small :class:`DomainRules` (how to cut a text into comparable units, how to classify them, how to
check structure, which units are *frame*, and what a predictor that knows only the frame writes);
domains without one use the generic rules.

**Frame and content.** An observation is split into its frame — what any predictor that knows
the format gets right (terminal: the echoed command and the prompt lines) — and its content,
what the environment added (terminal: what the command printed). Exact match, unit F1, the
deterministic tier and metadata score the content only; structure scores the frame. When the
truth has content, ``overall = content × (0.5 + 0.5 × structure / 100)``: a frame-only prediction
scores about 0, and a perfect frame cannot make up for missing content. When the truth has none,
the content part is whether the prediction has none either, and ``overall = content × structure /
100``: the frame is all there is to get right. Trivial predictors (frame-only, empty, repeat the
previous observation) anchor the scale: :mod:`agentworld.eval.baselines`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentworld.domains.actions import PROMPT_RE, terminal_keystrokes, tool_call
from agentworld.eval.content import check_metadata, command_is_deterministic, mask, written_files
from agentworld.schema import BenchSample, strip_marker

Tier = Literal["deterministic", "environment", "metadata"]

WEIGHTS: dict[str, float] = {"exact": 0.10, "line_f1": 0.20, "token_f1": 0.15, "deterministic": 0.35,
                             "metadata_valid": 0.10}
"""Weights of the content score: a weighted mean over the parts that apply (None parts are left out)."""
FRAME_SHARE = 0.5
"""When the truth has content, the share of ``overall`` that structure (the frame) can cost."""


class RuleScore(BaseModel):
    """Rule-tier result for one prediction; every score is 0–100 (None: does not apply)."""

    model_config = ConfigDict(frozen=True)

    exact: bool
    """The content units are the truth's, in order."""
    line_f1: float
    """F1 of the content units (lines; MCP: JSON leaves), runtime metadata masked."""
    deterministic: float | None
    metadata_valid: float | None
    structure: float
    content: float
    """Weighted mean of exact, unit F1, deterministic and metadata (:data:`WEIGHTS`)."""
    has_content: bool
    """Whether the truth has content beyond its frame."""
    verified: bool
    """The 0/1 rule verdict (``rule01``): every deterministic content unit of the truth is predicted
    (without any: the content is the truth's up to runtime metadata); with no content in the truth,
    the prediction has none either and its frame is the truth's. False for a frame-only prediction
    whenever the truth has content."""
    overall: float
    details: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True)
class Session:
    """What a classifier may know about the sample: current action and earlier turns."""

    domain: str
    action: str = ""
    history: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, domain: str, sample: BenchSample | None) -> Session:
        if sample is None:
            return cls(domain)
        return cls(domain, sample.action, tuple(sample.history()))

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


RULES: dict[str, DomainRules] = {}


def register_rules(*domains: str) -> Callable[[DomainRules], DomainRules]:
    def wrap(rules: DomainRules) -> DomainRules:
        RULES.update(dict.fromkeys(domains, rules))
        return rules
    return wrap


def norm(line: str) -> str:
    return " ".join(line.split())


def clean(text: str) -> str:
    return strip_marker(text)


def lines_of(text: str) -> list[str]:
    return [norm(x) for x in text.splitlines() if x.strip()]


def multiset_f1(pred: list[str], truth: list[str]) -> float:
    if not pred and not truth:
        return 100.0
    common = sum((Counter(pred) & Counter(truth)).values())
    return 0.0 if not common else 100.0 * 2 * common / (len(pred) + len(truth))


def _ratio(a: int, b: int) -> float:
    return 1.0 if a == b else min(a, b) / max(a, b)


def _is_metadata(unit: str) -> bool:
    masked = mask(unit).text
    return masked != unit and len(re.sub(r"<[A-Z]+>|[\W_]", "", masked)) < 3


# -- generic rules ---------------------------------------------------------------------------------

def generic_tiers(units: list[str], session: Session) -> list[Tier]:
    """Metadata-only units are metadata; units already seen in the session are deterministic."""
    seen = session.seen()
    return ["metadata" if _is_metadata(u) else "deterministic" if norm(mask(u).text) in seen
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
              "line_count": _ratio(len(p), len(t))}
    return 100 * (0.7 * checks["shapes"] + 0.3 * checks["line_count"]), checks


GENERIC = DomainRules(lines_of, generic_tiers, shape_structure)
register_rules("swe")(GENERIC)


# -- terminal --------------------------------------------------------------------------------------

def terminal_tiers(units: list[str], session: Session) -> list[Tier]:
    """Echo/prompt/typed lines, computations and reads of files written earlier are deterministic."""
    keys = terminal_keystrokes(session.action) or ""
    written = written_files([k for a, _ in session.history if (k := terminal_keystrokes(a))] + [keys])
    typed = {norm(x) for x in keys.splitlines()}
    computed = command_is_deterministic(keys, written)
    tiers: list[Tier] = []
    for n, unit in enumerate(units):
        prompt = PROMPT_RE.match(unit)
        if (n == 0 and prompt) or (prompt and not prompt.group("cmd")) or unit.lstrip("> ") in typed:
            tiers.append("deterministic")
        elif _is_metadata(unit):
            tiers.append("metadata")
        elif computed or unit in written.lines or re.search(r"command not found|No such file", unit):
            tiers.append("deterministic")
        else:
            tiers.append("environment")
    return tiers


def terminal_structure(pred: str, truth: str, _: Session) -> tuple[float, dict[str, float]]:
    """Echo line, prompt count and form, ends-with-prompt, final cwd."""
    p, t = lines_of(pred), lines_of(truth)
    tp = [m for x in t if (m := PROMPT_RE.match(x))]
    pp = [m for x in p if (m := PROMPT_RE.match(x))]
    checks: dict[str, float] = {}
    first_t = PROMPT_RE.match(t[0]) if t else None
    if first_t and first_t.group("cmd"):
        first_p = PROMPT_RE.match(p[0]) if p else None
        checks["echo"] = 0.0 if not first_p else 1.0 if first_p.group("cmd") == first_t.group("cmd") else 0.5
    ends_t = bool(t and (m := PROMPT_RE.match(t[-1])) and not m.group("cmd"))
    ends_p = bool(p and (m := PROMPT_RE.match(p[-1])) and not m.group("cmd"))
    checks["ends_with_prompt"] = float(ends_t == ends_p)
    checks["prompt_count"] = _ratio(len(pp), len(tp))
    loose = [x for x in p if re.match(r"^\S+@\S*:.*[#$]", x)]
    if loose:  # vacuous without prompt-like lines: an empty prediction earns nothing here
        checks["prompts_well_formed"] = len(pp) / len(loose)
    if tp:
        checks["cwd"] = float(bool(pp) and pp[-1].group("cwd") == tp[-1].group("cwd"))
    return 100 * sum(checks.values()) / len(checks), checks


def terminal_frame(units: list[str], session: Session) -> list[bool]:
    """Prompt lines (with or without an echoed command) and typed continuation lines (``> …``)."""
    typed = {norm(x) for x in (terminal_keystrokes(session.action) or "").splitlines()}
    return [bool(PROMPT_RE.match(u)) or (u.startswith(">") and norm(u.lstrip("> ")) in typed) for u in units]


DEFAULT_PROMPT = "root@localhost:/app#"
"""The frame-only predictor's prompt on a first turn (no earlier screen to read it from)."""


def terminal_frame_only(_truth: str, session: Session) -> str:
    """The echoed keystrokes after the last prompt on the previous screen, then that prompt again."""
    prompt = DEFAULT_PROMPT
    if session.history:
        screen = lines_of(clean(session.history[-1][1]))
        bare = [x for x in screen if (m := PROMPT_RE.match(x)) and not m.group("cmd")]
        prompt = bare[-1] if bare else prompt
    keys = (terminal_keystrokes(session.action) or "").rstrip("\n").split("\n")
    lines = [f"{prompt} {keys[0]}".rstrip(), *(f"> {k}" for k in keys[1:]), prompt]
    return "\n".join(lines)


register_rules("terminal")(DomainRules(lines_of, terminal_tiers, terminal_structure, terminal_frame,
                                       terminal_frame_only))


# -- mcp -------------------------------------------------------------------------------------------

def _json(text: str) -> Any:
    try:
        return json.loads(clean(text))
    except ValueError:
        return None


def _leaves(value: Any, path: str = "$") -> list[str]:
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _leaves(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [x for i, v in enumerate(value) for x in _leaves(v, f"{path}[{i}]")]
    return [f"{path}={json.dumps(value, ensure_ascii=False)}"]


def mcp_units(text: str) -> list[str]:
    """JSON results become ``$.path=value`` leaves (field-level matching); other text, lines."""
    value = _json(text)
    return _leaves(value) if isinstance(value, dict | list) else lines_of(text)


def mcp_tiers(units: list[str], session: Session) -> list[Tier]:
    """A field whose value the call's arguments or an earlier result already showed is deterministic."""
    known: set[str] = set()
    call = tool_call(session.action)
    for value in [*(call[1].values() if call else ()), *(_json(o) for _, o in session.history)]:
        known.update(u.split("=", 1)[-1] for u in _leaves(value))
    tiers = generic_tiers(units, session)
    return ["deterministic" if "=" in u and u.split("=", 1)[1] in known and tier != "metadata" else tier
            for u, tier in zip(units, tiers, strict=True)]


def json_structure(pred: str, truth: str, session: Session) -> tuple[float, dict[str, float]]:
    """Valid JSON where the truth is JSON, same type, same top-level keys and value types."""
    t, p = _json(truth), _json(pred)
    if not isinstance(t, dict | list):
        return shape_structure(pred, truth, session)
    checks = {"valid_json": float(isinstance(p, dict | list)), "same_type": float(type(p) is type(t))}
    if isinstance(t, list) and isinstance(p, list):
        checks["length"] = _ratio(len(p), len(t))
        t, p = (t[0] if t else {}), (p[0] if p else {})
    if isinstance(t, dict) and t:
        keys = set(t) | set(p) if isinstance(p, dict) else set(t)
        both = set(t) & set(p) if isinstance(p, dict) else set()
        checks["keys"] = len(both) / len(keys)
        checks["value_types"] = (sum(type(t[k]) is type(p[k]) for k in both) / len(both)
                                 if both else 0.0)
    return 100 * sum(checks.values()) / len(checks), checks


def mcp_frame_only(truth: str, _: Session) -> str:
    """An empty result of the truth's shape: ``{}`` or ``[]`` for JSON, else nothing."""
    value = _json(truth)
    return "{}" if isinstance(value, dict) else "[]" if isinstance(value, list) else ""


register_rules("mcp")(DomainRules(mcp_units, mcp_tiers, json_structure, frame_only=mcp_frame_only))


# -- GUI trees --------------------------------------------------------------------------

def _role(line: str) -> str:
    depth = (len(line) - len(line.lstrip())) // 2
    word = re.search(r"[A-Za-z][\w-]*", re.sub(r"\[[^\]]*\]|^[\s\-*|+`]+", "", line))
    return f"{min(depth, 8)}:{word.group(0).lower() if word else '?'}"


def tree_structure(pred: str, truth: str, _: Session) -> tuple[float, dict[str, float]]:
    """Accessibility-tree shape: (depth, role) of each node line, and node count."""
    p = [x for x in clean(pred).splitlines() if x.strip()]
    t = [x for x in clean(truth).splitlines() if x.strip()]
    checks = {"roles": multiset_f1([_role(x) for x in p], [_role(x) for x in t]) / 100,
              "node_count": _ratio(len(p), len(t))}
    return 100 * (0.7 * checks["roles"] + 0.3 * checks["node_count"]), checks


register_rules("android", "web", "os")(DomainRules(lines_of, generic_tiers, tree_structure))


# -- scoring ---------------------------------------------------------------------------------------

_NO_PLUGIN_RULES: set[str] = set()


def rules_for(domain: str) -> DomainRules:
    """The domain's rules: registered here, else its package's ``PLUGIN.rules`` (imported once), else
    the generic rules."""
    if domain not in RULES and domain not in _NO_PLUGIN_RULES:
        from agentworld.domains.base import plugin, resolve

        found = plugin(domain)
        if found is not None and found.rules:
            RULES[domain] = resolve(found.rules)
        else:
            _NO_PLUGIN_RULES.add(domain)
    return RULES.get(domain, GENERIC)


def score_rules(domain: str, prediction: str, ground_truth: str,
                sample: BenchSample | None = None) -> RuleScore:
    """Score one prediction against its ground truth with the domain's rules (generic fallback).

    Content units (the domain's units minus its frame) are compared with runtime metadata masked
    (``details["line_f1_raw"]``: whole lines, unmasked); see the module docstring for ``overall``.
    """
    rules = rules_for(domain)
    session = Session.of(domain, sample)
    pred, truth = clean(prediction), clean(ground_truth)
    t_units, p_units = rules.units(truth), rules.units(pred)
    t_frame, p_frame = rules.frame(t_units, session), rules.frame(p_units, session)
    t_content = [u for u, f in zip(t_units, t_frame, strict=True) if not f]
    p_content = [u for u, f in zip(p_units, p_frame, strict=True) if not f]
    has_content = bool(t_content)
    t_masked, p_masked = [norm(mask(u).text) for u in t_content], [norm(mask(u).text) for u in p_content]
    exact = [norm(u) for u in p_content] == [norm(u) for u in t_content]
    line_f1 = multiset_f1(p_masked, t_masked)
    tiers = rules.classify(t_units, session)
    det = [norm(mask(u).text) for u, tier, f in zip(t_units, tiers, t_frame, strict=True)
           if tier == "deterministic" and not f]
    deterministic = 100.0 * sum((Counter(det) & Counter(p_masked)).values()) / len(det) if det else None
    meta = check_metadata(mask("\n".join(p_content)), mask("\n".join(t_content)))
    structure, checks = rules.structure(pred, truth, session)
    token_f1 = multiset_f1([w for u in p_masked for w in u.split()], [w for u in t_masked for w in u.split()])
    parts = {"exact": 100.0 * exact, "line_f1": line_f1, "token_f1": token_f1, "deterministic": deterministic,
             "metadata_valid": meta.score}
    used = {k: v for k, v in parts.items() if v is not None}
    content = sum(WEIGHTS[k] * v for k, v in used.items()) / sum(WEIGHTS[k] for k in used)
    if has_content:
        overall = content * (1 - FRAME_SHARE + FRAME_SHARE * structure / 100)
        verified = bool(p_content) and (deterministic == 100.0 if det else p_masked == t_masked)
    else:
        frame = [norm(mask(u).text) for u, f in zip(p_units, p_frame, strict=True) if f]
        t_frame_units = [norm(mask(u).text) for u in t_units]
        overall = content * multiset_f1(frame, t_frame_units) / 100
        verified = not p_content and frame == t_frame_units
    details = {"line_f1_raw": round(multiset_f1(lines_of(pred), lines_of(truth)), 2),
               "tiers": dict(Counter(t for t, f in zip(tiers, t_frame, strict=True) if not f)),
               "frame_units": sum(t_frame), "content_units": len(t_content), "metadata": meta.per_kind,
               "structure": checks, "weights": {k: WEIGHTS[k] for k in used},
               "rules": domain if domain in RULES else "generic"}
    r2 = lambda v: None if v is None else round(v, 2)  # noqa: E731
    return RuleScore(exact=exact, line_f1=round(line_f1, 2), deterministic=r2(deterministic),
                     metadata_valid=r2(meta.score), structure=round(structure, 2), content=round(content, 2),
                     has_content=has_content, verified=verified, overall=round(overall, 2), details=details)


def frame_only_prediction(domain: str, ground_truth: str, sample: BenchSample | None = None) -> str:
    """What a predictor that knows the domain's frame and nothing of the content writes."""
    return rules_for(domain).frame_only(clean(ground_truth), Session.of(domain, sample))

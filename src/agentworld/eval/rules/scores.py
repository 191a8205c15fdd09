"""Rule-based scores beside the rubric judge: exact match, line F1, content tiers and structure.

Judge-free and deterministic, so they are cheap to recompute and cannot drift with a judge model.
Content follows the official judge prompts' three tiers: *deterministic* content (the command
echo, computation results, reads of files written earlier in the session) must match exactly;
*pre-existing environment* content (listings, versions) only looks plausible; *runtime metadata*
(timestamps, PIDs, ids, sizes, speeds) is checked for format and range. Each domain's plugin names
its :class:`~agentworld.domains.rules.DomainRules` (how to cut a text into comparable units, how to
classify them, how to check structure, which units are *frame*, and what a predictor that knows only
the frame writes); domains without one use the generic rules. This module only scores.

**Frame and content.** An observation is split into its frame — what any predictor that knows
the format gets right (terminal: the echoed command and the prompt lines) — and its content,
what the environment added (terminal: what the command printed). Exact match, unit F1, the
deterministic tier and metadata score the content only; structure scores the frame. When the
truth has content, ``overall = content × (0.5 + 0.5 × structure / 100)``: a frame-only prediction
scores about 0, and a perfect frame cannot make up for missing content. When the truth has none,
the content part is whether the prediction has none either, and ``overall = content × structure /
100``: the frame is all there is to get right. Trivial predictors (frame-only, empty, repeat the
previous observation) anchor the scale: :mod:`agentworld.eval.rules.baselines`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentworld.domains.content import check_metadata, mask
from agentworld.domains.rules import (
    MAX_SCORED_CHARS,
    Session,
    clean,
    cut,
    lines_of,
    multiset_f1,
    norm,
    rules_for,
)
from agentworld.schema import BenchSample

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
    """The 0/1 rule verdict (``rule01``, the GSPO rule reward): the prediction is the truth up to
    runtime metadata — every unit, frame and content, equal once times, durations, ids, pids and
    speeds are masked (sizes, counts, exit codes, titles and URLs are not), in order unless the
    domain's units name their own place. One changed number, line, title or order is not verified;
    nor is a frame-only prediction whenever the truth has content."""
    overall: float
    details: dict[str, Any] = Field(default_factory=dict)
    capped_at: int | None = None
    """Set (to :data:`~agentworld.domains.rules.MAX_SCORED_CHARS`) when the prediction, the truth or the
    session's earlier turns were longer: the scores compared the first that many characters of each
    (cut at a line end; ``details["capped"]`` has the lengths), while ``exact`` and ``verified`` also
    require the uncompared rests to be equal, character for character."""


def score_rules(domain: str, prediction: str, ground_truth: str,
                sample: BenchSample | None = None) -> RuleScore:
    """Score one prediction against its ground truth with the domain's rules (generic fallback).

    Content units (the domain's units minus its frame) are compared with runtime metadata masked
    (``details["line_f1_raw"]``: whole lines, unmasked); see the module docstring for ``overall``.
    """
    rules, own = rules_for(domain)
    session = Session.of(domain, sample)
    whole_pred, whole_truth = clean(prediction), clean(ground_truth)
    pred, truth = cut(whole_pred), cut(whole_truth)
    rests_equal = whole_pred[len(pred):] == whole_truth[len(truth):]
    t_units, p_units = rules.units(truth), rules.units(pred)
    t_frame, p_frame = rules.frame(t_units, session), rules.frame(p_units, session)
    t_content = [u for u, f in zip(t_units, t_frame, strict=True) if not f]
    p_content = [u for u, f in zip(p_units, p_frame, strict=True) if not f]
    has_content = bool(t_content)
    t_masked, p_masked = [norm(mask(u).text) for u in t_content], [norm(mask(u).text) for u in p_content]
    exact = [norm(u) for u in p_content] == [norm(u) for u in t_content] and rests_equal
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
    else:
        frame = [norm(mask(u).text) for u, f in zip(p_units, p_frame, strict=True) if f]
        overall = content * multiset_f1(frame, [norm(mask(u).text) for u in t_units]) / 100
    verified = (rests_equal and rules.verdict(p_units) == rules.verdict(t_units)
                and bool(p_content) == has_content)
    details = {"line_f1_raw": round(multiset_f1(lines_of(pred), lines_of(truth)), 2),
               "tiers": dict(Counter(t for t, f in zip(tiers, t_frame, strict=True) if not f)),
               "frame_units": sum(t_frame), "content_units": len(t_content), "metadata": meta.per_kind,
               "structure": checks, "weights": {k: WEIGHTS[k] for k in used},
               "rules": domain if own else "generic"}
    capped = pred != whole_pred or truth != whole_truth or session.cut
    if capped:
        details["capped"] = {"prediction_chars": len(whole_pred), "truth_chars": len(whole_truth),
                             "compared_chars": [len(pred), len(truth)], "history_cut": session.cut}
    r2 = lambda v: None if v is None else round(v, 2)  # noqa: E731
    return RuleScore(exact=exact, line_f1=round(line_f1, 2), deterministic=r2(deterministic),
                     metadata_valid=r2(meta.score), structure=round(structure, 2), content=round(content, 2),
                     has_content=has_content, verified=verified, overall=round(overall, 2), details=details,
                     capped_at=MAX_SCORED_CHARS if capped else None)


def frame_only_prediction(domain: str, ground_truth: str, sample: BenchSample | None = None) -> str:
    """What a predictor that knows the domain's frame and nothing of the content writes."""
    return rules_for(domain)[0].frame_only(cut(clean(ground_truth)), Session.of(domain, sample))

"""Trivial predictors scored beside every rule-tier number, and skill over the strongest of them.

Why: a score means little without the score of an answer that knows nothing. For each sample the
rule tier is also computed for predictions that need no world model — the *frame-only* prediction
(the domain's format with no content: terminal echo + prompt, MCP an empty result of the right
shape), the *empty* prediction, *repeat the previous observation*, and the *constant* one: the
observation the domain's shipped corpus most often gives for the action's kind (SWE: a shell run's
empty success; MCP: that tool's most common result), rewritten into the session as retrieval would
(:meth:`~agentworld.domains.retrieval_keys.RetrievalKeys.adapt`). A score ``s`` is shown as skill
over a baseline ``b``: ``(s − b) / (100 − b)`` (0: no better than the trivial answer; 1: perfect;
negative: worse) — over frame-only and over the *strongest* baseline on the same samples.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from statistics import fmean

from agentworld.domains import domain_names
from agentworld.domains.base import plugin_of
from agentworld.domains.retrieval_keys import retrieval_keys
from agentworld.domains.rules import Session, clean, rules_for
from agentworld.eval.rules.scores import frame_only_prediction, score_rules
from agentworld.schema import BenchSample, load_samples

BASELINES: tuple[str, ...] = ("frame_only", "empty", "repeat_previous", "constant")


def action_kind(domain: str, action: str) -> str:
    """What kind of action this is, as retrieval groups actions: the tool's name for a tool call,
    else the first word of the normalised action (a shell command's name, a browser call's verb)."""
    key = retrieval_keys(domain).key(action)
    if key.group:
        return key.group
    word = re.search(r"[\w.-]+", key.text)
    return word.group(0) if word else ""


@functools.lru_cache(maxsize=32)
def constant_table(domain: str) -> dict[str, str]:
    """For each action kind in ``domain``'s shipped corpus, the observation whose content (its units
    minus the frame, runtime metadata masked) the corpus gives most often for that kind; ties go to
    the shorter content, then the first recorded. Under ``""``: the same over every kind. Empty when
    the domain ships no corpus."""
    found = plugin_of(domain)
    path = found.data_file(found.corpus)
    if path is None:
        return {}
    rules, _ = rules_for(found)
    counts: dict[str, Counter[tuple[str, ...]]] = {}
    first: dict[tuple[str, tuple[str, ...]], str] = {}
    for row in load_samples([path], known_domains=domain_names()):
        truth = clean(row.ground_truth)
        units = rules.units(truth)
        flags = rules.frame(units, Session.of(domain, row))
        content = tuple(rules.verdict([u for u, f in zip(units, flags, strict=True) if not f]))
        for kind in (action_kind(domain, row.action), ""):
            counts.setdefault(kind, Counter())[content] += 1
            first.setdefault((kind, content), truth)
    return {kind: first[kind, max(c, key=lambda k, c=c: (c[k], -len(k)))]  # type: ignore[misc]
            for kind, c in counts.items()}


def constant_prediction(sample: BenchSample) -> str:
    """The corpus's most common observation for the sample's kind of action, adapted to its session."""
    table = constant_table(sample.domain)
    recorded = table.get(action_kind(sample.domain, sample.action), table.get("", ""))
    if not recorded:
        return ""
    history = sample.history()
    first = sample.prompt[0] if sample.prompt else sample.action
    return retrieval_keys(sample.domain).adapt(recorded, sample.action, first, [o for _, o in history])


def baseline_predictions(sample: BenchSample) -> dict[str, str]:
    """The trivial predictions for ``sample``, by :data:`BASELINES` name."""
    history = sample.history()
    return {"frame_only": frame_only_prediction(sample.domain, sample.ground_truth, sample), "empty": "",
            "repeat_previous": history[-1][1] if history else "", "constant": constant_prediction(sample)}


def baseline_scores(sample: BenchSample) -> dict[str, float]:
    """Rule-tier overall (0–100) of each trivial prediction for ``sample``."""
    return {name: score_rules(sample.domain, text, sample.ground_truth, sample).overall
            for name, text in baseline_predictions(sample).items()}


def mean_baselines(samples: Iterable[BenchSample]) -> dict[str, float]:
    """Mean rule-tier overall of each trivial predictor over ``samples`` (empty dict when none)."""
    rows = [baseline_scores(s) for s in samples]
    return {name: round(fmean(r[name] for r in rows), 2) for name in BASELINES} if rows else {}


def strongest(baselines: Mapping[str, float]) -> float:
    """The best mean of the trivial predictors on the same samples: the bar a world model must clear."""
    return max(baselines.values(), default=0.0)


def skill(score: float, baseline: float) -> float | None:
    """``(score − baseline) / (100 − baseline)``; None when the baseline is already perfect."""
    return None if baseline >= 100.0 else round((score - baseline) / (100.0 - baseline), 4)

"""Rejection sampling: draw K teacher predictions per turn, score them, keep the good ones for SFT.

Why: the teacher's own answers (with its reasoning) make better SFT targets than the bare logged
observation only when they are faithful, so every candidate is scored against the logged ground
truth by two independent signals and only those above a threshold are kept (the paper kept 69.2%).

Scoring (both on a 0–100 scale)::

    judge  = (rubric total_score - 1) / 4 * 100     # rubric mean of 1–5 dimensions, via parse_judge
    rules  = score_rules(domain, prediction, truth).overall
    score  = rule_weight * rules + (1 - rule_weight) * judge

With no judge backend, ``score = rules``. A candidate whose judge reply does not parse, or whose
teacher call failed or came back empty, gets no score and is never kept (it counts as rejected).
A candidate is kept exactly when ``score >= threshold``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentworld.data.types import TrainSample
from agentworld.domains.registry import DOMAINS
from agentworld.eval.infer import BACKEND_ERRORS
from agentworld.eval.judge import combine_scores, judge_percent, rubric_messages
from agentworld.eval.rules.scores import score_rules
from agentworld.io import atomic_write_jsonl
from agentworld.models.base import ChatBackend, ChatRequest
from agentworld.models.parsing import JudgeParseError, parse_judge, parse_prediction, split_thinking
from agentworld.schema import BenchSample

__all__ = ["Candidate", "DomainRetention", "RejectionReport", "rejection_sample", "rejection_sample_async",
           "to_bench_sample"]


class Candidate(BaseModel):
    """One teacher prediction for one turn, with its scores (``None`` where a score is missing)."""

    model_config = ConfigDict(frozen=True)

    sample_id: str
    domain: str
    index: int
    raw: str = ""
    prediction: str = ""
    reasoning: str = ""
    judge_score: float | None = None
    rule_score: float | None = None
    score: float | None = None
    kept: bool = False
    error: str | None = None


class DomainRetention(BaseModel):
    """Candidates drawn and kept for one domain."""

    model_config = ConfigDict(frozen=True)

    candidates: int = 0
    kept: int = 0

    @property
    def rate(self) -> float:
        return self.kept / self.candidates if self.candidates else 0.0


class RejectionReport(BaseModel):
    """What a rejection-sampling run did; ``kept`` are the SFT-ready records."""

    model_config = ConfigDict(frozen=True)

    turns: int
    candidates: list[Candidate]
    kept: list[TrainSample]
    per_domain: dict[str, DomainRetention] = Field(default_factory=dict)
    threshold: float
    rule_weight: float
    out: str | None = None

    @property
    def retention_rate(self) -> float:
        return len(self.kept) / len(self.candidates) if self.candidates else 0.0

    def summary(self) -> dict[str, Any]:
        """A JSON-able summary: totals and retention per domain."""
        return {"turns": self.turns, "candidates": len(self.candidates), "kept": len(self.kept),
                "retention_rate": round(self.retention_rate, 4), "threshold": self.threshold,
                "rule_weight": self.rule_weight,
                "per_domain": {d: {"candidates": r.candidates, "kept": r.kept, "rate": round(r.rate, 4)}
                               for d, r in sorted(self.per_domain.items())}}


def to_bench_sample(sample: TrainSample) -> BenchSample:
    """The AgentWorldBench row for a training turn, so the official world-model and judge messages apply."""
    actions = [a for a, _ in sample.history] + [sample.action]
    observations = [o for _, o in sample.history] + [sample.observation]
    return BenchSample(task=sample.task or sample.domain, id=sample.id, prompt=actions, response=observations,
                       system_str=sample.system, turn_idx=len(sample.history) + 1,
                       total_turns=sample.total_turns)


async def _candidate(sample: TrainSample, bench: BenchSample, index: int, teacher: ChatBackend,
                     judge: ChatBackend | None, settings: dict[str, Any],
                     gate: asyncio.Semaphore) -> Candidate:
    base = Candidate(sample_id=sample.id, domain=sample.domain, index=index)
    # The seed differs per candidate: it is a real sampling parameter, and it makes each request's
    # cache key distinct, so a response cache cannot collapse the K draws into one.
    request = ChatRequest(messages=tuple(bench.messages()), model=settings["teacher_model"],
                          max_tokens=settings["max_tokens"], temperature=settings["temperature"],
                          seed=settings["seed"] + index)
    async with gate:
        try:
            result = await teacher.complete(request)
        except BACKEND_ERRORS as exc:
            return base.model_copy(update={"error": f"teacher: {type(exc).__name__}: {exc}"})
    raw = result.content
    reasoning = result.reasoning or split_thinking(raw, "predicted_observation")[1]
    if not raw.strip():
        return base.model_copy(update={"error": "teacher: empty answer", "reasoning": reasoning})
    prediction = parse_prediction(raw)
    domain = DOMAINS[sample.domain] if sample.domain in DOMAINS else None  # noqa: SIM401
    rules = score_rules(sample.domain, prediction, sample.observation, bench).overall
    judge_score: float | None = None
    error: str | None = None
    if judge is not None:
        if domain is None:
            known = ", ".join(DOMAINS.names())
            raise ValueError(f"no judge prompt for domain {sample.domain!r} (known: {known})")
        judge_request = ChatRequest(messages=rubric_messages(bench, prediction, domain),
                                    model=settings["judge_model"], max_tokens=settings["judge_max_tokens"],
                                    temperature=settings["judge_temperature"])
        async with gate:
            try:
                verdict = parse_judge((await judge.complete(judge_request)).content)
                judge_score = judge_percent(verdict.total_score)
            except JudgeParseError as exc:
                error = f"judge: {exc}"
            except BACKEND_ERRORS as exc:
                error = f"judge: {type(exc).__name__}: {exc}"
    score = None if error else combine_scores(judge_score, rules, settings["rule_weight"])
    kept = score is not None and score >= settings["threshold"]
    return base.model_copy(update={"raw": raw, "prediction": prediction, "reasoning": reasoning,
                                   "judge_score": judge_score, "rule_score": rules, "score": score,
                                   "kept": kept, "error": error})


def _record(sample: TrainSample, cand: Candidate) -> TrainSample:
    """The SFT record of a kept candidate: the teacher's prediction replaces the logged observation."""
    meta = {**sample.meta, "reasoning": cand.reasoning, "prediction": cand.prediction, "score": cand.score,
            "judge_score": cand.judge_score, "rule_score": cand.rule_score, "candidate": cand.index,
            "ground_truth": sample.observation}
    return sample.model_copy(update={"id": f"{sample.id}-c{cand.index}", "observation": cand.prediction,
                                     "meta": meta})


async def rejection_sample_async(samples: Iterable[TrainSample], teacher: ChatBackend,
                                 judge: ChatBackend | None, *, k: int = 4, threshold: float,
                                 rule_weight: float = 0.5,
                                 concurrency: int = 8, temperature: float = 1.0, seed: int = 0,
                                 teacher_model: str = "", judge_model: str = "",
                                 max_tokens: int | None = None,
                                 judge_max_tokens: int | None = None, judge_temperature: float | None = 0.0,
                                 out: str | Path | None = None) -> RejectionReport:
    """Async :func:`rejection_sample` (use inside a running event loop)."""
    if k < 1:
        raise ValueError("k must be >= 1")
    if not 0.0 <= rule_weight <= 1.0:
        raise ValueError("rule_weight must be in [0, 1]")
    if temperature <= 0:
        raise ValueError("temperature must be > 0: K draws at temperature 0 are the same answer")
    settings = {"teacher_model": teacher_model, "judge_model": judge_model, "max_tokens": max_tokens,
                "judge_max_tokens": judge_max_tokens, "judge_temperature": judge_temperature,
                "temperature": temperature, "seed": seed, "threshold": threshold, "rule_weight": rule_weight}
    gate = asyncio.Semaphore(max(1, concurrency))
    turns = list(samples)
    jobs = [_candidate(s, to_bench_sample(s), i, teacher, judge, settings, gate)
            for s in turns for i in range(k)]
    candidates = list(await asyncio.gather(*jobs))
    by_id = {s.id: s for s in turns}
    kept = [_record(by_id[c.sample_id], c) for c in candidates if c.kept]
    per_domain: dict[str, DomainRetention] = {}
    for c in candidates:
        r = per_domain.get(c.domain, DomainRetention())
        per_domain[c.domain] = DomainRetention(candidates=r.candidates + 1, kept=r.kept + int(c.kept))
    if out is not None:
        atomic_write_jsonl(out, (s.model_dump(mode="json") for s in kept))
    return RejectionReport(turns=len(turns), candidates=candidates, kept=kept, per_domain=per_domain,
                           threshold=threshold, rule_weight=rule_weight, out=str(out) if out else None)


def rejection_sample(samples: Iterable[TrainSample], teacher: ChatBackend, judge: ChatBackend | None, *,
                     k: int = 4, threshold: float, rule_weight: float = 0.5, concurrency: int = 8,
                     **options: Any) -> RejectionReport:
    """Sample ``k`` teacher predictions per turn, score each, keep exactly those with ``score >= threshold``.

    Args:
        samples: turns to resample (their ``observation`` is the ground truth scored against).
        teacher: the world model drawing candidates (sent the official world-model messages).
        judge: rubric judge; ``None`` scores by rules alone.
        k: candidates per turn.
        threshold: minimum combined score (0–100) to keep a candidate.
        rule_weight: weight of the rule score in the combined score (see the module docstring).
        concurrency: backend calls in flight at once.
        **options: ``temperature`` (> 0), ``seed``, ``teacher_model``, ``judge_model``, ``max_tokens``,
            ``judge_max_tokens``, ``judge_temperature``, ``out`` (JSONL of kept TrainSample records).
    """
    return asyncio.run(rejection_sample_async(samples, teacher, judge, k=k, threshold=threshold,
                                              rule_weight=rule_weight, concurrency=concurrency, **options))

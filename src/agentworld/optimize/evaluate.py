"""Scoring one candidate system prompt on one split, with eval's own inference, rule tier and judge.

A sample's score is the rule tier's ``overall`` (0–100), mixed with the rubric (``(total − 1) / 4 ×
100``) by ``rule_weight`` when a judge is given — the rejection sampler's mix. A sample whose
prediction failed at the endpoint scores 0 and is counted; it is not journalled as done, so a
resumed run asks again. Every request goes through the run's response cache.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean

from pydantic import BaseModel, ConfigDict

from agentworld.domains.registry import DomainRegistry
from agentworld.eval.infer import model_request, predict
from agentworld.eval.judge import JudgeSettings, combine_scores, judge_percent, judge_sample
from agentworld.eval.rules.scores import score_rules
from agentworld.models.base import ChatBackend
from agentworld.models.cache import ResponseCache
from agentworld.optimize.config import PromptOptConfig
from agentworld.optimize.split import with_prompt
from agentworld.schema import BenchSample


class SampleScore(BaseModel):
    """One sample under one prompt: its score (0–100), the parts, and the prediction it was given for."""

    model_config = ConfigDict(frozen=True)

    id: str
    score: float
    rule: float | None = None
    rubric: float | None = None
    prediction: str = ""
    error: str | None = None


class Evaluation(BaseModel):
    """A prompt's scores on one split: the mean and every sample's."""

    model_config = ConfigDict(frozen=True)

    score: float
    errors: int
    samples: tuple[SampleScore, ...]

    def worst(self, k: int) -> list[SampleScore]:
        """The ``k`` lowest-scored samples (ties by id, so the choice is deterministic)."""
        return sorted(self.samples, key=lambda s: (s.score, s.id))[:k]


@dataclass
class Scorer:
    """What scoring needs: the endpoints, the cache, the domains and the run's settings."""

    config: PromptOptConfig
    model: ChatBackend
    judge: ChatBackend | None
    cache: ResponseCache
    domains: DomainRegistry
    gate: asyncio.Semaphore
    """Slots for world-model requests."""
    judge_gate: asyncio.Semaphore
    """Slots for judge requests (as many again: neither endpoint waits for the other)."""

    def _settings(self) -> JudgeSettings:
        c = self.config
        return JudgeSettings(model=c.judge_model or (self.judge.name if self.judge else ""),
                             retries=c.judge_retries, max_tokens=c.judge_max_tokens,
                             temperature=c.judge_temperature)

    async def sample(self, sample: BenchSample, prompt: str) -> SampleScore:
        """Predict ``sample`` under ``prompt`` and score the prediction."""
        c, domain = self.config, self.domains[sample.domain]
        shown = with_prompt(sample, domain.system_prompt, prompt)
        async with self.gate:
            request = model_request(shown, c.model, c.max_tokens, c.temperature)
            pred = await predict(shown, request, self.model, self.cache, self.domains)
        if pred.error:
            return SampleScore(id=sample.id, score=0.0, error=pred.error)
        rule = score_rules(sample.domain, pred.prediction, sample.ground_truth, sample).overall
        rubric = None
        if self.judge is not None:
            async with self.judge_gate:
                row = await judge_sample(shown, pred.prediction, pred.raw, domain, self._settings(),
                                         self.judge, self.cache)
            rubric = judge_percent(row.rubric_total) if row.rubric_total is not None else None
        score = combine_scores(rubric, rule, c.rule_weight) if self.judge is not None else rule
        return SampleScore(id=sample.id, score=round(score or 0.0, 4), rule=rule, rubric=rubric,
                           prediction=pred.prediction)

    async def evaluate(self, samples: Sequence[BenchSample], prompt: str) -> Evaluation:
        """Every sample of a split under ``prompt``, ``concurrency`` requests at a time."""
        scores = await asyncio.gather(*(self.sample(s, prompt) for s in samples))
        return Evaluation(score=round(fmean(s.score for s in scores), 4) if scores else 0.0,
                          errors=sum(1 for s in scores if s.error), samples=tuple(scores))

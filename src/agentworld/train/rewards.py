"""Reward functions for world-model RL, in TRL's reward signature (usable with any trainer).

Every reward here is a callable ``f(prompts=, completions=, **dataset_columns, **kwargs) ->
list[float | None]`` (``RubricReward`` and ``HybridReward`` are ``async``, which TRL's
``GRPOTrainer`` awaits on its own event loop). Dataset columns read: ``ground_truth`` (required),
``domain``, ``action`` and ``history`` (a list of ``[action, observation]`` pairs or its JSON
encoding); without ``action`` the last user message of the prompt is used.

**Strict tag extraction.** A completion is reduced to its prediction before anything scores it:
thinking is removed (:func:`agentworld.models.parsing.split_thinking`), then the *last* complete
``<predicted_observation>…</predicted_observation>`` block is taken. Text outside that block —
thinking, self-praise, notes to the judge — is never shown to the judge nor compared by the rules,
so it cannot earn reward. A completion without a well-formed block (no opening tag, or an unclosed
one) is a *format failure*: its rubric part and its rule part are both 0 (the format penalty; 0 is
the bottom of each range, so a malformed completion never beats any well-formed one with a
non-negative score).

**Reward formula** (one consistent reading of "rubric weighted 9:1 against rule-based verifiers
(0/1, scaled to [0, 25])"):

* ``rubric01 = (total_score - 1) / 4`` in [0, 1], where ``total_score`` is the judge's mean of the
  five 1–5 rubric dimensions (so its sum spans 5–25: the "[0, 25]" scale of the report).
* ``rule01`` in {0, 1}: :attr:`RuleScore.verified` of :func:`score_rules`, the same content-based
  scoring as evaluation: 1 when the prediction is the truth up to runtime metadata (every unit, frame
  and content, equal once times, durations, ids, PIDs and speeds are masked; the domain's ``verdict``),
  so one changed count, title, line or order earns 0 — a policy cannot learn that a small change is
  free. A frame-only prediction (terminal: echo + prompt) earns 0 whenever the truth has content.
* ``hybrid = scale * (0.9 * rubric01 + 0.1 * rule01)``. ``scale=1`` (default) gives [0, 1];
  ``scale=25`` puts both parts on the report's [0, 25] range. Under GRPO/GSPO's group-normalised
  advantages a constant scale does not change the update, so the default stays in [0, 1].

The same combination is obtained with separate functions: ``reward_funcs=[RubricReward(...),
RuleReward()]`` and ``reward_weights=[0.9, 0.1]`` (or ``[9, 1]``, which only rescales). A judge
that fails every retry gives ``None`` (TRL then leaves that function out of the sample's sum)
rather than a fake score.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Coroutine, Sequence
from typing import Any

from agentworld.domains import DEFAULT_DOMAIN
from agentworld.domains.registry import DOMAINS, DomainRegistry
from agentworld.eval.infer import BACKEND_ERRORS
from agentworld.eval.judge import rubric_messages
from agentworld.eval.rules.scores import score_rules
from agentworld.models.base import ChatBackend, ChatRequest
from agentworld.models.parsing import JudgeParseError, parse_judge, split_thinking
from agentworld.schema import BenchSample

RESPONSE_TAG = "predicted_observation"
_JUDGE_ERRORS: tuple[type[BaseException], ...] = (*BACKEND_ERRORS, JudgeParseError)
RUBRIC_WEIGHT = 0.9
RULE_WEIGHT = 0.1


def completion_text(completion: Any) -> str:
    """The text of a TRL completion: a string, or (conversational) a list of message dicts."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return str(completion.get("content") or "")
    if isinstance(completion, Sequence):
        return "".join(completion_text(m) for m in completion
                       if not isinstance(m, dict) or m.get("role", "assistant") == "assistant")
    return str(completion or "")


def strict_prediction(raw: str, tag: str = RESPONSE_TAG) -> str | None:
    """The last complete ``<tag>…</tag>`` block after removing thinking, or None (format failure).

    Stricter than :func:`agentworld.models.parsing.parse_prediction` on purpose: the evaluation
    harness falls back to the whole text, but during RL that fallback would let text outside the
    tag (including praise aimed at the judge) reach the judge.
    """
    if not raw:
        return None
    cleaned, _ = split_thinking(raw, tag)
    found = re.findall(rf"<{re.escape(tag)}>(.*?)</{re.escape(tag)}>", cleaned, re.IGNORECASE | re.DOTALL)
    return found[-1].strip() if found else None


def _history(value: Any) -> list[tuple[str, str]]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        value = json.loads(value)
    return [(str(a), str(o)) for a, o in value]


def _last_user(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    for message in reversed(list(prompt or [])):
        if isinstance(message, dict) and message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


def sample_of(index: int, ground_truth: str, domain: str | None, action: str | None, history: Any,
              prompt: Any) -> BenchSample:
    """A one-turn :class:`BenchSample` from dataset columns, so the judge's request builder is reused."""
    pairs = _history(history)
    act = action if action is not None else _last_user(prompt)
    return BenchSample(task=domain or DEFAULT_DOMAIN, id=str(index), prompt=[a for a, _ in pairs] + [act],
                       response=[o for _, o in pairs] + [ground_truth], turn_idx=len(pairs) + 1)


def _column(kwargs: dict[str, Any], name: str, n: int) -> list[Any]:
    value = kwargs.get(name)
    return list(value) if value is not None else [None] * n


class RuleReward:
    """0/1 verifier on deterministic content (see module docstring); 0 on a format failure."""

    __name__ = "rule_reward"

    def __init__(self, *, tag: str = RESPONSE_TAG) -> None:
        self.tag = tag

    def score(self, completion: Any, ground_truth: str, domain: str | None = None, action: str | None = None,
              history: Any = None, prompt: Any = None) -> float:
        """``rule01`` for one completion."""
        prediction = strict_prediction(completion_text(completion), self.tag)
        if prediction is None:
            return 0.0
        sample = sample_of(0, ground_truth, domain, action, history, prompt)
        return float(score_rules(sample.domain, prediction, ground_truth, sample).verified)

    def __call__(self, prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        n = len(completions)
        truths, domains = _column(kwargs, "ground_truth", n), _column(kwargs, "domain", n)
        actions, histories = _column(kwargs, "action", n), _column(kwargs, "history", n)
        prompts = list(prompts) if prompts is not None else [None] * n
        rows = zip(completions, truths, domains, actions, histories, prompts, strict=True)
        return [self.score(c, t or "", d, a, h, p) for c, t, d, a, h, p in rows]


class RuleTierReward(RuleReward):
    """The rule tier's overall score in [0, 1] (``overall / 100``); 0 on a format failure.

    A dense stand-in for the rubric judge where no judge runs (``RLConfig.reward="offline_hybrid"``: 0.9 this,
    0.1 :class:`RuleReward`): it credits a prediction for each unit, line and frame it gets right, where
    ``rule01`` gives a small model 0 on nearly every turn and so a GRPO group no advantage to learn from.
    It is the evaluation's own content-based score, so it cannot be raised by text outside the tag.
    """

    __name__ = "rule_tier_reward"

    def score(self, completion: Any, ground_truth: str, domain: str | None = None, action: str | None = None,
              history: Any = None, prompt: Any = None) -> float:
        prediction = strict_prediction(completion_text(completion), self.tag)
        if prediction is None:
            return 0.0
        sample = sample_of(0, ground_truth, domain, action, history, prompt)
        return float(score_rules(sample.domain, prediction, ground_truth, sample).overall) / 100.0


class RubricReward:
    """LLM-rubric reward ``(total_score - 1) / 4`` from a judge backend, judged on the strict prediction.

    Args:
        judge: any :class:`ChatBackend` (OpenAI-compatible endpoint, scripted backend, ...).
        domains: resolves a row's ``domain`` to its judge system prompt (built-in registry default).
        cache: reuse verdicts of identical judge requests (GRPO groups often repeat a completion).
        batch: most judge requests in flight at once (a semaphore over ``asyncio.gather``).
        model, temperature, max_tokens: sent with every judge request.
        retries: attempts per request before giving up with ``None``.
    """

    __name__ = "rubric_reward"

    def __init__(self, judge: ChatBackend, *, domains: DomainRegistry | None = None, cache: bool = True,
                 batch: int = 16, model: str = "", temperature: float | None = 0.0,
                 max_tokens: int | None = 4096, retries: int = 2, tag: str = RESPONSE_TAG) -> None:
        self.judge = judge
        self.domains = domains if domains is not None else DOMAINS
        self.cache = cache
        self.batch = max(1, batch)
        self.model, self.temperature, self.max_tokens = model, temperature, max_tokens
        self.retries = max(1, retries)
        self.tag = tag
        self._cache: dict[str, float | None] = {}
        self.calls = 0
        self.failures = 0

    def request(self, sample: BenchSample, prediction: str) -> ChatRequest:
        """The rubric judge request (official message builder) for one strict prediction."""
        messages = rubric_messages(sample, prediction, self.domains[sample.domain])
        return ChatRequest(messages=messages, model=self.model, temperature=self.temperature,
                           max_tokens=self.max_tokens)

    async def _judge(self, request: ChatRequest, semaphore: asyncio.Semaphore) -> float | None:
        key = request.key()
        if self.cache and key in self._cache:
            return self._cache[key]
        value: float | None = None
        async with semaphore:
            for _ in range(self.retries):
                self.calls += 1
                try:
                    result = await self.judge.complete(request)
                    verdict = parse_judge(result.content)
                except _JUDGE_ERRORS:
                    continue
                value = min(1.0, max(0.0, (verdict.total_score - 1.0) / 4.0))
                break
        if value is None:
            self.failures += 1
        if self.cache and value is not None:
            self._cache[key] = value
        return value

    async def score(self, completions: list[Any], ground_truth: list[str], domain: list[Any],
                    action: list[Any], history: list[Any], prompts: list[Any]) -> list[float | None]:
        """``rubric01`` per completion (0 on format failure, None when the judge failed)."""
        semaphore = asyncio.Semaphore(self.batch)
        jobs: dict[int, Coroutine[Any, Any, float | None]] = {}
        out: list[float | None] = [0.0] * len(completions)
        for i, completion in enumerate(completions):
            prediction = strict_prediction(completion_text(completion), self.tag)
            if prediction is None:
                continue
            sample = sample_of(i, ground_truth[i] or "", domain[i], action[i], history[i], prompts[i])
            jobs[i] = self._judge(self.request(sample, prediction), semaphore)
        results = await asyncio.gather(*jobs.values())
        for i, value in zip(jobs, results, strict=True):
            out[i] = value
        return out

    async def __call__(self, prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        n = len(completions)
        return await self.score(completions, _column(kwargs, "ground_truth", n), _column(kwargs, "domain", n),
                                _column(kwargs, "action", n), _column(kwargs, "history", n),
                                list(prompts) if prompts is not None else [None] * n)


class HybridReward:
    """One callable: ``scale * (rubric_weight * rubric01 + rule_weight * rule01)`` (defaults 0.9/0.1).

    A judge failure (``None`` rubric) yields ``None`` for that completion rather than a reward
    built from the rule part alone, which would be on a different scale than its group.
    """

    __name__ = "hybrid_reward"

    def __init__(self, rubric: RubricReward, rule: RuleReward | None = None, *,
                 rubric_weight: float = RUBRIC_WEIGHT, rule_weight: float = RULE_WEIGHT,
                 scale: float = 1.0) -> None:
        self.rubric = rubric
        self.rule = rule or RuleReward(tag=rubric.tag)
        self.rubric_weight, self.rule_weight, self.scale = rubric_weight, rule_weight, scale

    async def __call__(self, prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        rubric = await self.rubric(prompts, completions, **kwargs)
        rule = self.rule(prompts, completions, **kwargs)
        return [None if r is None else self.scale * (self.rubric_weight * r + self.rule_weight * (v or 0.0))
                for r, v in zip(rubric, rule, strict=True)]

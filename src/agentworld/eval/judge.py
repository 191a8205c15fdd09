"""Judging a prediction: rubric scores, Turing test (which is real?) or reference comparison.

The rubric request is built exactly as the official harness builds it (domain judge system
prompt; context, current turn, simulated and real output blocks; whole user message stripped).
Each attempt is its own request cached under ``key#attempt``, so a re-run replays the attempts a
crashed run completed and sends only the missing ones.
"""

from __future__ import annotations

import random
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agentworld.domains.registry import Domain
from agentworld.errors import AgentWorldError, DataError
from agentworld.eval import templates
from agentworld.eval.config import JudgeFields
from agentworld.eval.infer import BACKEND_ERRORS
from agentworld.eval.records import STATUS_TEXT, JudgmentRow, JudgmentStatus
from agentworld.eval.runfolder import RunFolder
from agentworld.models.base import ChatBackend, ChatRequest, ChatResult, Usage
from agentworld.models.cache import ResponseCache
from agentworld.models.parsing import JudgeParseError, parse_choice, parse_judge
from agentworld.redact import redact_text
from agentworld.schema import BenchSample, Message


class JudgeSettings(BaseModel):
    """What every judge request of a run shares."""

    model_config = ConfigDict(frozen=True)

    model: str
    mode: Literal["rubric", "turing", "reference"] = "rubric"
    retries: int = 3
    max_tokens: int = 32768
    temperature: float = 0.6
    seed: int = 0


def context_block(sample: BenchSample) -> str:
    """``# Context …`` followed by each history pair, or ``""`` for a first turn (as officially)."""
    body = "".join(action + "\n" + observation + "\n\n" for action, observation in sample.history())
    return f"{templates.CONTEXT_HEADING}\n\n{body}" if body else ""


def current_block(sample: BenchSample) -> str:
    return f"{templates.CURRENT_HEADING}\n\n{sample.action}"


def rubric_messages(sample: BenchSample, prediction: str, domain: Domain) -> tuple[Message, ...]:
    """The official rubric judge request: domain judge prompt + the stripped four-block user message."""
    user = templates.RUBRIC_USER.format(
        context=context_block(sample), current=current_block(sample),
        predicted=templates.fenced(templates.PREDICTED_HEADING, domain.clean_marker(prediction)),
        ground_truth=templates.fenced(templates.TRUTH_HEADING, domain.clean_marker(sample.ground_truth)),
    ).strip()
    return (Message(role="system", content=domain.judge_system_prompt), Message(role="user", content=user))


def judge_percent(total_score: float) -> float:
    """A rubric total (mean of 1–5 scores) mapped onto 0–100, so it mixes with rule scores."""
    return max(0.0, min(100.0, (total_score - 1.0) / 4.0 * 100.0))


def combine_scores(judge: float | None, rules: float | None, rule_weight: float) -> float | None:
    """``rule_weight * rules + (1 - rule_weight) * judge``; one signal alone when the other is absent."""
    if judge is None and rules is None:
        return None
    if judge is None:
        return rules
    if rules is None:
        return judge
    return rule_weight * rules + (1.0 - rule_weight) * judge


def prediction_position(sample_id: str, seed: int) -> str:
    """Where the world model's text goes (``A``/``B``): a fair draw, fixed by seed and sample id."""
    return "A" if random.Random(f"{seed}:{sample_id}").random() < 0.5 else "B"


def pair_messages(sample: BenchSample, prediction: str, other: str, domain: Domain, mode: str,
                  position: str) -> tuple[Message, ...]:
    """Turing (``other`` = ground truth) or reference (``other`` = reference prediction) request."""
    first, second = (prediction, other) if position == "A" else (other, prediction)
    blocks = {"context": context_block(sample), "current": current_block(sample),
              "response_a": templates.fenced(templates.RESPONSE_A_HEADING, domain.clean_marker(first)),
              "response_b": templates.fenced(templates.RESPONSE_B_HEADING, domain.clean_marker(second))}
    if mode == "turing":
        user = templates.TURING_USER.format(**blocks)
    else:
        truth = templates.fenced(templates.TRUTH_HEADING, domain.clean_marker(sample.ground_truth))
        user = templates.REFERENCE_USER.format(**blocks, ground_truth=truth)
    return (Message(role="user", content=user.strip()),)


def _failed(row: JudgmentRow, status: JudgmentStatus, error: str | None = None) -> JudgmentRow:
    """``row`` ended with ``status``; ``error`` is the endpoint's text, else the status's official wording."""
    return row.model_copy(update={"status": status, "error": error or STATUS_TEXT.get(status)})


def _fill(row: JudgmentRow, result: ChatResult, mode: str, position: str | None) -> JudgmentRow | None:
    """The successful row for a judge reply, or None when the reply does not parse."""
    if mode == "rubric":
        try:
            verdict = parse_judge(result.content)
        except JudgeParseError:
            return None
        return row.model_copy(update={
            "status": "ok", "error": None, "scores": verdict.scores, "total_score": verdict.total_score,
            "strengths": verdict.strengths, "weaknesses": verdict.weaknesses})
    choice = parse_choice(result.content)
    if choice is None:
        return None
    picked_prediction = choice == position
    correct = not picked_prediction if mode == "turing" else picked_prediction
    return row.model_copy(update={"status": "ok", "error": None, "choice": choice, "correct": correct})


async def judge_sample(sample: BenchSample, prediction: str, raw: str, domain: Domain,
                       settings: JudgeSettings, backend: ChatBackend, cache: ResponseCache,
                       reference: str | None = None) -> JudgmentRow:
    """Judge one prediction with up to ``settings.retries`` attempts; never raises for backend errors.

    An empty generation is recorded as failed without asking the judge (official behaviour).
    """
    row = JudgmentRow(id=sample.id, domain=sample.domain, mode=settings.mode)
    if not raw:
        return _failed(row, "no_generation")
    position = None
    if settings.mode == "rubric":
        messages = rubric_messages(sample, prediction, domain)
    else:
        if settings.mode == "reference" and reference is None:
            return _failed(row, "no_reference")
        position = prediction_position(sample.id, settings.seed)
        other = sample.ground_truth if settings.mode == "turing" else (reference or "")
        messages = pair_messages(sample, prediction, other, domain, settings.mode, position)
    request = ChatRequest(messages=messages, model=settings.model, max_tokens=settings.max_tokens,
                          temperature=settings.temperature)
    row = row.model_copy(update={"position": position})
    prompt = completion = 0
    latency = 0.0
    status: JudgmentStatus = "parse_error"
    error: str | None = None
    for attempt in range(settings.retries):
        try:
            result, _ = await cache.call(backend, request, attempt)
        except BACKEND_ERRORS as exc:
            status, error = "api_error", redact_text(f"{type(exc).__name__}: {exc}")
            continue
        status, error = "parse_error", None
        prompt += result.usage.prompt_tokens
        completion += result.usage.completion_tokens
        latency += result.latency_s
        row = row.model_copy(update={
            "judge_raw": result.content, "attempts": attempt + 1, "latency_s": latency,
            "usage": Usage(prompt_tokens=prompt, completion_tokens=completion)})
        done = _fill(row, result, settings.mode, position)
        if done is not None:
            return done
    return _failed(row, status, error).model_copy(update={"attempts": settings.retries})


def reference_predictions(config: JudgeFields) -> dict[str, str]:
    """Predictions of the reference run by id (empty and failed ones left out: those samples fail)."""
    if config.reference_run is None:
        raise AgentWorldError("judge mode 'reference' needs --reference-run DIR")
    rows = RunFolder(config.reference_run).predictions()
    if not rows:
        raise DataError("reference run has no predictions", path=str(config.reference_run))
    return {k: r.prediction for k, r in rows.items() if r.raw and not r.error}

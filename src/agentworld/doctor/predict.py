"""The doctor's real requests: one prediction on a shipped sample per domain, and one judge verdict.

Why real samples: a thinking world model spends most of its tokens on the long, structured prompts
of AgentWorldBench, not on a ping; only such a request shows its latency, its speed, how long it
thinks and whether ``--max-tokens`` lets it close its ``<predicted_observation>``. When it does
not, the same request is sent once more with the budget the context allows, so the report can name
the ``--max-tokens`` that avoids the cut (with a quarter of headroom: thinking length varies).
"""

from __future__ import annotations

import json
import math
from typing import Any

from agentworld.doctor.checks import first_choice, http_failure, reasoning_place
from agentworld.doctor.config import DoctorConfig
from agentworld.doctor.findings import EndpointReport
from agentworld.doctor.probe import Probe
from agentworld.errors import AgentWorldError
from agentworld.schema import BenchSample, parse_row

HEADROOM = 1.25
ROUND_TO = 1024


def shipped_samples(domains: list[str]) -> list[BenchSample]:
    """The first row of each shipped corpus (of ``domains``, or of every domain that ships one).

    Raises:
        AgentWorldError: a domain that ships no sample (the text lists those that do).
    """
    from agentworld.corpus import shipped_corpora

    corpora = shipped_corpora()
    unknown = [d for d in domains if d not in corpora]
    if unknown:
        raise AgentWorldError(f"--domains: no shipped sample for {', '.join(unknown)}; known: "
                              f"{', '.join(corpora)}")
    samples = []
    for name, path in corpora.items():
        if domains and name not in domains:
            continue
        with path.open(encoding="utf-8") as handle:
            samples.append(parse_row(json.loads(handle.readline()), path=str(path), line=1))
    return samples


def suggested_max_tokens(needed: int) -> int:
    """``needed`` plus a quarter, rounded up to a multiple of 1,024."""
    return math.ceil(needed * HEADROOM / ROUND_TO) * ROUND_TO


def _request(report: EndpointReport, messages: list[dict[str, Any]], max_tokens: int,
             temperature: float) -> dict[str, Any]:
    return {"model": report.model, "messages": messages, "max_tokens": max_tokens, "temperature": temperature}


def _tokens(usage: dict[str, Any], key: str, fallback: int) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and value >= 0 else fallback


async def predict(report: EndpointReport, probe: Probe, sample: BenchSample, config: DoctorConfig,
                  key_env: str) -> None:
    """Predict ``sample``'s observation; report speed, thinking and whether the answer was cut."""
    from agentworld.domains.registry import get_domain
    from agentworld.models.openai_compat import extract_reasoning

    check = f"predict {sample.domain}"
    tag = get_domain(sample.domain).response_tag
    messages = [{"role": m.role, "content": m.content} for m in sample.messages()]
    answer = await probe.post("chat/completions", _request(report, messages, config.max_tokens,
                                                           config.temperature))
    parsed = first_choice(answer) if answer.status == 200 else None
    if answer.status == 400 and report.context_tokens and config.max_tokens >= report.context_tokens // 2:
        said = probe.scrub(answer.message)
        report.fail(check, f"HTTP 400: {said}", f"{report.url}: the {sample.domain} prediction was refused "
                    f"(HTTP 400: {said}); the prompt and --max-tokens {config.max_tokens} must fit the "
                    f"context of {report.context_tokens}: lower --max-tokens or raise the server's context "
                    "length")
        return
    if parsed is None:
        http_failure(report, probe, check, answer, f"the {sample.domain} prediction", key_env, [])
        return
    message, finish, usage = parsed
    if report.reasoning in (None, "none"):
        report.reasoning = reasoning_place(message)
    content, reasoning = extract_reasoning(message)
    thought = reasoning or ""
    completion = _tokens(usage, "completion_tokens", math.ceil((len(content) + len(thought)) / 4))
    details = usage.get("completion_tokens_details")
    share = round(completion * len(thought) / max(1, len(thought) + len(content)))
    thinking = _tokens(details if isinstance(details, dict) else {}, "reasoning_tokens", share)
    speed = f"{answer.elapsed_s:.1f} s, {completion / max(answer.elapsed_s, 1e-6):,.0f} tok/s"
    data = {"latency_s": round(answer.elapsed_s, 3), "completion_tokens": completion,
            "thinking_tokens": thinking, "finish_reason": finish, "sample": sample.id}
    closed = f"</{tag}>" in content
    if finish == "length":
        await _cut(report, probe, check, messages, config, usage, thinking, tag, data)
        return
    stats = f"{speed}, {completion:,} tokens ({thinking:,} thinking)"
    if not closed:
        report.add(check, "warn", f"{stats}; finished ({finish}) without closing <{tag}>", closed=False,
                   **data)
    elif completion > 0.8 * config.max_tokens:
        report.max_tokens = max(report.max_tokens or 0, suggested_max_tokens(completion))
        report.add(check, "warn", f"{stats}, <{tag}> closed, but close to --max-tokens {config.max_tokens}: "
                   f"use --max-tokens {suggested_max_tokens(completion)}", closed=True, **data)
    else:
        report.add(check, "ok", f"{stats}, <{tag}> closed", closed=True, **data)


async def _cut(report: EndpointReport, probe: Probe, check: str, messages: list[dict[str, Any]],
               config: DoctorConfig, usage: dict[str, Any], thinking: int, tag: str,
               data: dict[str, Any]) -> None:
    """A cut answer: ask once more with the largest budget the context allows, to measure the need."""
    head = (f"cut at --max-tokens {config.max_tokens:,} ({thinking:,} thinking tokens so far), "
            f"<{tag}> not closed")
    prompt = _tokens(usage, "prompt_tokens", 0)
    budget = (report.context_tokens - prompt) if report.context_tokens else 4 * config.max_tokens
    if not config.find_max_tokens or budget <= config.max_tokens:
        why = "the context allows no more" if config.find_max_tokens else "--no-find-max-tokens"
        report.add(check, "warn", f"{head}; not measured how many it needs ({why})", closed=False, **data)
        return
    again = await probe.post("chat/completions", _request(report, messages, budget, config.temperature))
    parsed = first_choice(again) if again.status == 200 else None
    if parsed is None:
        said = probe.scrub(again.message)
        report.add(check, "warn", f"{head}; asking with --max-tokens {budget:,} failed ({said})",
                   closed=False, **data)
        return
    _, finish, usage2 = parsed
    if finish == "length":
        report.add(check, "warn", f"{head}; cut again at {budget:,}: the answer does not fit the context",
                   closed=False, **data)
        return
    needed = _tokens(usage2, "completion_tokens", budget)
    suggestion = min(suggested_max_tokens(needed), budget)
    report.max_tokens = max(report.max_tokens or 0, suggestion)
    report.add(check, "warn", f"{head}; it needs {needed:,}: use --max-tokens {suggestion:,}", closed=False,
               needed_tokens=needed, suggested_max_tokens=suggestion, **data)


async def judge_verdict(report: EndpointReport, probe: Probe, sample: BenchSample, config: DoctorConfig,
                        key_env: str) -> None:
    """A rubric request as ``eval`` builds it, on a sample's own ground truth; its verdict must parse."""
    from agentworld.domains.registry import get_domain
    from agentworld.eval.judge import rubric_messages
    from agentworld.models.openai_compat import extract_reasoning
    from agentworld.models.parsing import JudgeParseError, parse_judge

    messages = [{"role": m.role, "content": m.content}
                for m in rubric_messages(sample, sample.ground_truth, get_domain(sample.domain))]
    answer = await probe.post("chat/completions", _request(report, messages, config.judge_max_tokens, 0.6))
    parsed = first_choice(answer) if answer.status == 200 else None
    if parsed is None:
        http_failure(report, probe, "judge verdict", answer, "the judge request", key_env, [])
        return
    message, finish, _ = parsed
    if report.reasoning in (None, "none"):
        report.reasoning = reasoning_place(message)
    content, _ = extract_reasoning(message)
    try:
        verdict = parse_judge(content)
    except JudgeParseError as exc:
        cut = f", cut at --judge-max-tokens {config.judge_max_tokens:,}" if finish == "length" else ""
        report.fail("judge verdict", f"does not parse: {exc}{cut}",
                    f"{report.url}: the judge's verdict does not parse ({exc}{cut})")
        return
    scores = ", ".join(f"{k} {v}" for k, v in verdict.scores.items())
    report.add("judge verdict", "ok", f"parses in {answer.elapsed_s:.1f} s ({sample.domain} sample, its own "
               f"ground truth): {scores}", scores=verdict.scores)

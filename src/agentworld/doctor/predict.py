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

from agentworld.doctor import fit as fitting
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
    from agentworld.domains import domain_names

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
            samples.append(parse_row(json.loads(handle.readline()), path=str(path), line=1,
                                     known_domains=domain_names()))
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
    fit = await fitting.fit_prompt(report, probe, check, sample.domain, messages, config, key_env)
    if fit is None:
        return
    answer = await probe.post("chat/completions", _request(report, messages, fit.budget, config.temperature))
    parsed = first_choice(answer) if answer.status == 200 else None
    context, _ = fitting.context_from_error(answer.message) if answer.status == 400 else (None, None)
    if context is not None:
        fitting.learn_context(report, context, "named by the server when it refused the prediction")
        prompt = f"prompt ({fit.prompt_tokens:,} tokens)" if fit.prompt_tokens else "prompt"
        room = (f"--max-tokens {context - fit.prompt_tokens:,} or less" if fit.prompt_tokens
                else "a lower --max-tokens")
        report.fail(check, f"the {prompt} and --max-tokens {fit.budget:,} exceed the context of {context:,}",
                    f"{report.url}: the {sample.domain} {prompt} and --max-tokens {fit.budget:,} do not fit "
                    f"the server's context of {context:,} tokens: use {room}, or start the server with a "
                    f"larger context ({fitting.CONTEXT_FLAGS})")
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
            "thinking_tokens": thinking, "finish_reason": finish, "sample": sample.id,
            "prompt_tokens": fit.prompt_tokens}
    closed = f"</{tag}>" in content
    if finish == "length":
        await _cut(report, probe, check, messages, config, fit, usage, thinking, tag, data)
        return
    stats = f"{speed}, {completion:,} tokens ({thinking:,} thinking)"
    if not closed:
        report.add(check, "warn", f"{stats}; finished ({finish}) without closing <{tag}>", closed=False,
                   **data)
    elif completion > 0.8 * fit.budget:
        suggestion = suggested_max_tokens(completion)
        report.max_tokens = max(report.max_tokens or 0, suggestion)
        report.add(check, "warn", f"{stats}, <{tag}> closed, but close to --max-tokens {fit.budget}: "
                   f"use --max-tokens {suggestion}", closed=True, **data)
    else:
        report.add(check, "ok", f"{stats}, <{tag}> closed", closed=True, **data)


async def _cut(report: EndpointReport, probe: Probe, check: str, messages: list[dict[str, Any]],
               config: DoctorConfig, fit: fitting.Fit, usage: dict[str, Any], thinking: int, tag: str,
               data: dict[str, Any]) -> None:
    """A cut answer: ask once more with the largest budget the context allows, to measure the need."""
    prompt = _tokens(usage, "prompt_tokens", fit.prompt_tokens or 0)
    completion = _tokens(usage, "completion_tokens", fit.budget)
    if report.context_tokens is None and prompt and completion < fit.budget:
        # llama-cpp-python lowers max_tokens to what its (unreported) context leaves: that is where it cut
        fitting.learn_context(report, prompt + completion, "where the server cut the answer: prompt + answer")
        report.room = min(report.room or completion, completion)
    so_far = f"({thinking:,} thinking tokens so far), <{tag}> not closed"
    head = (f"cut at --max-tokens {fit.budget:,} {so_far}" if completion >= fit.budget else
            f"cut by the context at {completion:,} answer tokens {so_far}")
    budget = (report.context_tokens - prompt) if report.context_tokens else 4 * fit.budget
    if not config.find_max_tokens or budget <= fit.budget:
        why = "--no-find-max-tokens"
        if config.find_max_tokens:
            bigger = fitting.larger_context(prompt + 2 * max(completion, fit.budget))
            why = (f"the context allows no more; a server started with a context of {bigger:,} "
                   f"({fitting.CONTEXT_FLAGS}) would show it")
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

"""Does a domain's prompt, plus ``--max-tokens``, fit the server's context? Measured, then said plainly.

Why a separate sizing request: servers differ in what they do with a prompt plus ``max_tokens``
larger than their context. vLLM and SGLang refuse it (HTTP 400), llama-cpp-python's server
silently lowers ``max_tokens`` to what is left and refuses only a prompt that alone does not fit,
and llama-cpp-python does not report its context anywhere. A one-token request shows the prompt's
real size in the server's own tokens (``usage.prompt_tokens``) and costs only the prefill, which
the real prediction then reuses from the server's prompt cache. A refusal is read for the context
it names (every server phrases it differently) and turned into what to change: the server's
context flag, or a ``--max-tokens`` that fits — never one above the context.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentworld.doctor.checks import first_choice, http_failure
from agentworld.doctor.config import DoctorConfig
from agentworld.doctor.findings import EndpointReport, Finding
from agentworld.doctor.probe import Probe

CONTEXT_FLAGS = "llama-cpp-python --n_ctx, llama-server -c, vLLM --max-model-len, SGLang --context-length"
"""How each server is told its context size; the advice names them all (a server rarely says which it is)."""

ANSWER_ROOM = 2048
"""Answer tokens the advised context leaves beside a prompt that did not fit (fewer if --max-tokens is)."""

_CONTEXT = (re.compile(r"maximum context length is (\d+)"),              # vLLM, llama-cpp-python, OpenAI
            re.compile(r"maximum context length of (\d+)"),              # SGLang
            re.compile(r"context (?:size|window|length)(?: of)? \(?(\d+)"),  # llama-server, llama-cpp
            re.compile(r"n_ctx(?:_slot)?\D{0,4}(\d+)"))
_PROMPT = (re.compile(r"\((\d+) in the messages"), re.compile(r"request \((\d+) tokens\)"),
           re.compile(r"Requested tokens \((\d+)\)"), re.compile(r"(\d+) in your prompt"))


def context_from_error(text: str) -> tuple[int | None, int | None]:
    """``(context, prompt_tokens)`` named in a server's refusal, each None when it does not say."""
    return _first(_CONTEXT, text), _first(_PROMPT, text)


def _first(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for pattern in patterns:
        found = pattern.search(text)
        if found:
            return int(found[1])
    return None


def larger_context(needed: int) -> int:
    """The smallest power of two, at least 2,048, that holds ``needed`` tokens: a context to start with."""
    size = 2048
    while size < needed:
        size *= 2
    return size


@dataclass(frozen=True)
class Fit:
    """What the sizing request found: the prompt's size and the ``max_tokens`` to predict with."""

    prompt_tokens: int | None
    budget: int


def too_small(report: EndpointReport, check: str, domain: str, context: int, prompt: int | None,
              max_tokens: int) -> None:
    """The prompt alone does not fit: the one-line reason names the context and the flag to raise it."""
    size = f" ({prompt:,} tokens)" if prompt else ""
    answer = min(max_tokens, ANSWER_ROOM)
    start = f"a context of {larger_context(prompt + answer):,} or more" if prompt else "a larger context"
    report.fail(check, f"the prompt{size} does not fit the context of {context:,} tokens",
                f"{report.url}: the {domain} prompt{size} does not fit the server's context of {context:,} "
                f"tokens: start the server with {start} ({CONTEXT_FLAGS})", context_tokens=context,
                prompt_tokens=prompt)


def learn_context(report: EndpointReport, context: int, how: str) -> None:
    """Record a context the server did not report but showed (in a refusal, or by where it cut)."""
    if report.context_tokens is not None:
        return
    report.context_tokens = context
    found = Finding("context length", "ok", f"{context:,} tokens ({how})")
    rows = [i for i, f in enumerate(report.findings) if f.check == "context length"]
    if rows:  # it replaces the "not reported" row
        report.findings[rows[0]] = found
    else:
        report.findings.append(found)


async def fit_prompt(report: EndpointReport, probe: Probe, check: str, domain: str,
                     messages: list[dict[str, Any]], config: DoctorConfig, key_env: str) -> Fit | None:
    """Size ``messages`` with a one-token request; None when the endpoint is unusable (reason set).

    A ``--max-tokens`` that leaves the prompt no room makes the endpoint unusable as configured
    (its reason says the ``--max-tokens`` that fits), yet the prediction is still made with the
    room there is, so the report shows whether the answer closes within it.
    """
    answer = await probe.post("chat/completions", {"model": report.model, "messages": messages,
                                                    "max_tokens": 1, "temperature": 0})
    parsed = first_choice(answer) if answer.status == 200 else None
    if parsed is None:
        context, prompt = context_from_error(answer.message) if answer.status == 400 else (None, None)
        if context is None:
            http_failure(report, probe, check, answer, f"the {domain} prediction", key_env, [])
            return None
        learn_context(report, context, "named by the server when it refused the prompt")
        too_small(report, check, domain, context, prompt, config.max_tokens)
        return None
    prompt_tokens = parsed[2].get("prompt_tokens")
    prompt = prompt_tokens if isinstance(prompt_tokens, int) and prompt_tokens > 0 else None
    context = report.context_tokens
    if prompt is None or context is None:
        return Fit(prompt, config.max_tokens)
    room = context - prompt
    if room <= 0:
        too_small(report, check, domain, context, prompt, config.max_tokens)
        return None
    report.room = min(report.room or room, room)
    if config.max_tokens <= room:
        return Fit(prompt, config.max_tokens)
    bigger = larger_context(prompt + config.max_tokens)
    report.fail("max tokens", f"the {domain} prompt is {prompt:,} tokens: with --max-tokens "
                f"{config.max_tokens:,} it needs {prompt + config.max_tokens:,}, more than the context of "
                f"{context:,}; predicting with {room:,} instead", f"{report.url}: the {domain} prompt "
                f"({prompt:,} tokens) and --max-tokens {config.max_tokens:,} do not fit the server's context "
                f"of {context:,} tokens (vLLM and SGLang refuse such requests, llama.cpp cuts the answers): "
                f"use --max-tokens {room:,} or less, or start the server with a context of {bigger:,} or "
                f"more ({CONTEXT_FLAGS})", prompt_tokens=prompt, room=room)
    return Fit(prompt, room)

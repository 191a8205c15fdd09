"""The checks of one endpoint, in order: reachable, key accepted, model listed, a chat completion,
where the reasoning comes back, the context length; then (:mod:`agentworld.doctor.predict`) a
prediction per domain or a judge verdict.

Each check adds a row to the endpoint's :class:`~agentworld.doctor.findings.EndpointReport`; the
first one that makes the endpoint unusable also sets its one-line reason and ends the checks of
that endpoint (later ones would only repeat it).
"""

from __future__ import annotations

from typing import Any

from agentworld.doctor.findings import EndpointReport
from agentworld.doctor.probe import Answer, Probe

PING = [{"role": "user", "content": "Reply with one word: OK"}]
PING_MAX_TOKENS = 1024
"""Enough for a thinking model to show where its reasoning goes, even when it is cut."""

CONTEXT_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length")
"""Where servers put the context length on a /v1/models entry (vLLM and SGLang: max_model_len)."""

PLACES = {"reasoning": "message.reasoning (vLLM's reasoning parser)",
          "reasoning_content": "message.reasoning_content (SGLang; also older vLLM, llama.cpp with a "
                               "reasoning format)",
          "inline": "inline <think>...</think> in the content (no reasoning parser; agentworld strips it)",
          "none": "none (not a thinking model, or thinking is off)"}


def reasoning_place(message: dict[str, Any]) -> str:
    """Where a chat message holds its reasoning: a field name, ``inline`` or ``none``."""
    for name in ("reasoning", "reasoning_content"):
        value = message.get(name)
        if isinstance(value, str) and value.strip():
            return name
    content = message.get("content")
    if isinstance(content, str) and ("<think>" in content or "</think>" in content):
        return "inline"
    return "none"


def first_choice(answer: Answer) -> tuple[dict[str, Any], str | None, dict[str, Any]] | None:
    """``(message, finish_reason, usage)`` of a chat completion body, or None when it has no choice."""
    body = answer.body if isinstance(answer.body, dict) else {}
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    usage = body.get("usage")
    return (message if isinstance(message, dict) else {}, choices[0].get("finish_reason"),
            usage if isinstance(usage, dict) else {})


def http_failure(report: EndpointReport, probe: Probe, check: str, answer: Answer, what: str,
                 key_env: str, listed: list[str]) -> None:
    """Record a failed request as the one-line reason a user can act on."""
    said = probe.scrub(answer.message)
    where = report.url
    if answer.status == 0 and said.startswith("timed out"):
        report.fail(check, said, f"{where}: {what} {said}; a slow server needs a larger --timeout-s")
    elif answer.status == 0:
        report.fail(check, f"no answer: {said}",
                    f"{where}: cannot connect ({said}); is the server running on that host and port?")
    elif answer.status in (401, 403):
        report.fail("auth", f"HTTP {answer.status}: {said}",
                    f"{where}: the API key was refused (HTTP {answer.status}: {said}); give the server's key "
                    f"in {key_env}")
    elif answer.status == 404 and listed:
        report.fail(check, f"HTTP 404: {said}",
                    f"{where}: model {report.model!r} is not served there (HTTP 404: {said}); it serves "
                    f"{', '.join(listed)}: use {_flag(report)} {listed[0]}")
    elif answer.status == 404:
        report.fail(check, f"HTTP 404: {said}",
                    f"{where}: {what} answered HTTP 404 ({said}); wrong model name, or does the base URL "
                    "need /v1?")
    else:
        report.fail(check, f"HTTP {answer.status}: {said}",
                    f"{where}: {what} failed (HTTP {answer.status}: {said})")


def _flag(report: EndpointReport) -> str:
    return "--model" if report.role == "model" else "--judge-model"


async def connect(report: EndpointReport, probe: Probe, key_env: str) -> list[dict[str, Any]] | None:
    """Reachable, key accepted, model listed; the /v1/models entries, or None when unusable."""
    answer = await probe.get("models")
    if answer.status == 0 or answer.status in (401, 403):
        if answer.status:
            report.add("reachable", "ok", f"GET /models answered in {answer.elapsed_s:.2f} s")
        http_failure(report, probe, "reachable", answer, "GET /models", key_env, [])
        return None
    report.add("reachable", "ok", f"GET /models: HTTP {answer.status} in {answer.elapsed_s:.2f} s")
    if answer.status != 200:
        report.add("auth", "info", "not checked here (no /models list)")
        report.add("model listed", "warn", f"GET /models answered HTTP {answer.status}: does the base URL "
                   "need /v1?")
        return []
    report.add("auth", "ok", "key accepted" if probe.has_key else "no key needed")
    data = answer.body.get("data") if isinstance(answer.body, dict) else None
    cards = [c for c in data if isinstance(c, dict) and isinstance(c.get("id"), str)] if isinstance(
        data, list) else []
    ids = [c["id"] for c in cards]
    if report.model in ids:
        report.add("model listed", "ok", report.model)
    else:
        report.add("model listed", "warn", f"{report.model!r} is not listed; the server lists "
                   f"{', '.join(ids) or 'nothing'} (some servers answer any name: the chat check decides)",
                   listed=ids)
    return cards


async def chat(report: EndpointReport, probe: Probe, key_env: str, cards: list[dict[str, Any]]) -> bool:
    """One small chat completion works; records where its reasoning came back."""
    answer = await probe.post("chat/completions", {"model": report.model, "messages": PING,
                                                    "max_tokens": PING_MAX_TOKENS})
    listed = [c["id"] for c in cards]
    if answer.status != 200:
        http_failure(report, probe, "chat completion", answer, "POST /chat/completions", key_env, listed)
        return False
    parsed = first_choice(answer)
    if parsed is None:
        report.fail("chat completion", "the response has no choices",
                    f"{report.url}: the chat completion has no choices: not an OpenAI-compatible server?")
        return False
    message, finish, usage = parsed
    report.add("chat completion", "ok", f"HTTP 200 in {answer.elapsed_s:.2f} s, "
               f"{usage.get('completion_tokens', '?')} tokens, finish_reason {finish}")
    report.reasoning = reasoning_place(message)
    return True


async def context_length(report: EndpointReport, probe: Probe, cards: list[dict[str, Any]]) -> None:
    """The context length the server reports: a /v1/models field, llama.cpp's /props, or none."""
    card = next((c for c in cards if c.get("id") == report.model), cards[0] if cards else {})
    for name in CONTEXT_FIELDS:
        value = card.get(name)
        if isinstance(value, int) and value > 0:
            report.context_tokens = value
            report.add("context length", "ok", f"{value:,} tokens (/v1/models {name})")
            return
    props = await probe.get("props", root=True)
    settings = props.body.get("default_generation_settings") if isinstance(props.body, dict) else None
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    if props.status == 200 and isinstance(n_ctx, int) and n_ctx > 0:
        report.context_tokens = n_ctx
        report.add("context length", "ok", f"{n_ctx:,} tokens (llama.cpp /props n_ctx, per slot)")
        return
    meta = card.get("meta")
    trained = meta.get("n_ctx_train") if isinstance(meta, dict) else None
    if isinstance(trained, int) and trained > 0:
        report.add("context length", "info", f"not reported; the model was trained on {trained:,}")
        return
    report.add("context length", "info", "not reported by the server")

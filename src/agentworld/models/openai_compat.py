"""An async backend for any OpenAI-compatible chat endpoint (vLLM, SGLang, OpenAI, the mock server).

It speaks the one call it needs, ``POST {base_url}/chat/completions`` with JSON in and out, over
aiohttp (:mod:`agentworld.models.aio_transport` says why not httpx) rather than through the SDK: the
SDK's import alone cost 1.5 s of CPU (it builds every type of the whole OpenAI API), more than the
rest of an ``eval run`` start-up together, and its per-request layers a quarter of the CPU each
request takes, which at high concurrency delays every other request.

Retries are done here, so every attempt is counted in :attr:`ChatResult.attempts` and the backoff
policy is ours: exponential with jitter on 429, 5xx,
timeouts and connection errors, honouring ``Retry-After``; other 4xx fail at once. Reasoning is
read from the server's separate field (``reasoning`` in vLLM, ``reasoning_content`` in SGLang) or
from inline ``<think>`` blocks, so ``content`` is always the answer alone.

The API key is kept out of ``repr``, log records and exception text: a run log or a traceback
pasted into an issue must never leak it. So are credentials written into the base URL
(``http://user:KEY@host/v1?api_key=KEY``): they are taken out of the URL the client keeps and sent
where they belong (HTTP Basic auth, every request's query string), see :func:`split_credentials`.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import random
import time
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

import orjson

from agentworld.errors import BackendError, one_line
from agentworld.models.aio_transport import AioTransport, TransportFailure
from agentworld.models.base import ChatRequest, ChatResult, Usage, register_backend
from agentworld.models.parsing import split_thinking
from agentworld.redact import is_secret_param, redact_text, redact_url

log = logging.getLogger(__name__)

REASONING_FIELDS: tuple[str, ...] = ("reasoning", "reasoning_content")
"""Message fields servers put separated reasoning in: vLLM (``reasoning``), SGLang (``reasoning_content``)."""


class _Retryable(Exception):
    """One failed attempt that may succeed when tried again (internal to the retry loop)."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class OpenAIBackend:
    """A :class:`~agentworld.models.base.ChatBackend` talking to an OpenAI-compatible server.

    One connection pool (:mod:`agentworld.models.aio_transport`, sized to the concurrency) is shared
    by all requests; an ``asyncio.Semaphore(concurrency)`` bounds the requests in flight. The
    semaphore is held only during an HTTP attempt, not while backing off, so one failing request
    never idles a slot.

    Args:
        base_url: e.g. ``http://127.0.0.1:8000/v1``.
        model: the model name sent with every request (``ChatRequest.model`` is informational).
        api_key: defaults to ``$OPENAI_API_KEY`` or ``"EMPTY"`` (what local servers accept).
        concurrency: most requests in flight at once; the pool is sized to match.
        max_retries: retries after the first attempt (so at most ``max_retries + 1`` attempts).
        timeout_s: per-attempt timeout; a timed-out attempt is retried.
        backoff_base_s: first backoff delay; doubled per retry, with jitter.
        backoff_max_s: cap on one delay (also on a server's ``Retry-After``).
        extra_body: extra JSON fields for every request (e.g. ``chat_template_kwargs``).
        max_tokens: ``max_tokens`` of a request that sets none (a server's own default may be small:
            a thinking model needs 16,384 or more).
        max_response_bytes: the most bytes read of one answer; a longer one stops the caller with a
            :class:`~agentworld.http_limits.ResponseTooLargeError` (None: ``$AGENTWORLD_MAX_RESPONSE_BYTES``
            or 32 MiB).
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, concurrency: int = 16,
                 max_retries: int = 5, timeout_s: float = 600, backoff_base_s: float = 0.5,
                 backoff_max_s: float = 30, extra_body: dict[str, Any] | None = None,
                 max_tokens: int | None = None, max_response_bytes: int | None = None) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        clean_url, query, auth = split_credentials(base_url)
        self.base_url = redact_url(base_url)
        self.model = model
        self.name = f"openai:{model}"
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.extra_body = dict(extra_body or {})
        self.max_tokens = max_tokens
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self._secrets = [self._api_key, auth[1] if auth else None,
                         *(value for name, value in query.items() if is_secret_param(name))]
        self._semaphore = asyncio.Semaphore(concurrency)
        self._rng = random.Random()
        self._http = AioTransport(
            clean_url.rstrip("/") + "/", params=query, auth=auth, timeout_s=timeout_s,
            connections=concurrency + 8, max_response_bytes=max_response_bytes,
            headers={"Authorization": f"Bearer {self._api_key}", "Content-Type": "application/json",
                     "Accept": "application/json"})

    def __repr__(self) -> str:
        return (f"OpenAIBackend(base_url={self.base_url!r}, model={self.model!r}, api_key='***', "
                f"concurrency={self.concurrency}, max_retries={self.max_retries})")

    __str__ = __repr__

    async def aclose(self) -> None:
        """Close the connection pool (idempotent)."""
        await self._http.aclose()

    async def probe(self) -> bool:
        """Whether the server answers at all (``GET {base_url}/models``, any status below 500).

        Used by a pool (:mod:`agentworld.models.pool`) to bring an endpoint marked down back: cheap for the
        server, and needs no model name or tokens.
        """
        try:
            response = await self._http.request("GET", "models", timeout_s=min(self.timeout_s, 10.0))
        except TransportFailure:
            return False
        return response.status_code < 500

    async def __aenter__(self) -> OpenAIBackend:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def complete(self, request: ChatRequest) -> ChatResult:
        """Send ``request``, retrying transient failures; raise :class:`BackendError` on failure.

        ``latency_s`` is the duration of the successful attempt (model latency);
        ``meta["elapsed_s"]`` also counts queueing, failed attempts and backoff.
        """
        started = time.perf_counter()
        kwargs = self._create_kwargs(request)
        last: _Retryable | None = None
        for attempt in range(1, self.max_retries + 2):
            if last is not None:
                await asyncio.sleep(self._delay(attempt - 1, last.retry_after))
            try:
                async with self._semaphore:
                    t0 = time.perf_counter()
                    response = await self._send(kwargs)
                    latency = time.perf_counter() - t0
            except _Retryable as exc:
                last = exc
                log.warning("%s: attempt %d/%d failed: %s", self.name, attempt, self.max_retries + 1,
                            self._scrub(str(exc)))
                continue
            result = self._result(response, latency, attempt)
            return result.model_copy(update={"meta": {**result.meta,
                                                       "elapsed_s": time.perf_counter() - started}})
        assert last is not None
        raise BackendError(self._scrub(f"{self.name}: gave up after {self.max_retries + 1} attempts: {last}"),
                           retryable=True, status=last.status)

    # -- one attempt ------------------------------------------------------------------------------

    def _create_kwargs(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body of ``POST /chat/completions``; unset sampling settings are left to the server.

        Built once per request (retries reuse it) as plain JSON types, so it can be posted as is.
        """
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        }
        for key in ("max_tokens", "temperature", "seed"):
            value = getattr(request, key)
            if value is not None:
                body[key] = value
        if request.max_tokens is None and self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        body.update(self.extra_body)
        body.update(request.extra)
        return body

    async def _send(self, body: dict[str, Any]) -> dict[str, Any]:
        """One HTTP attempt; transient failures become :class:`_Retryable`, others :class:`BackendError`."""
        try:
            response = await self._http.request("POST", "chat/completions", content=orjson.dumps(body))
        except TransportFailure as exc:
            message = str(exc) if exc.kind == "timeout" else f"connection error: {exc}"
            raise _Retryable(self._scrub(message)) from None
        status = response.status_code
        if status >= 400:
            detail = self._scrub(_short(_error_message(response)))
            if status == 429 or status >= 500:
                raise _Retryable(f"HTTP {status}: {detail}", status=status,
                                 retry_after=retry_after_s(response.headers))
            raise BackendError(f"{self.name}: HTTP {status}: {detail}", retryable=False, status=status)
        try:
            data = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            raise BackendError(self._scrub(f"{self.name}: HTTP {status} with a body that is not JSON: "
                                           f"{_short(response.text)}"), retryable=False) from None
        if not isinstance(data, dict):
            raise BackendError(f"{self.name}: the response is not a JSON object", retryable=False)
        return data

    def _result(self, response: dict[str, Any], latency: float, attempts: int) -> ChatResult:
        """A chat-completion JSON object as a :class:`ChatResult`, reasoning separated from the answer.

        Every field is the server's word, so each is taken only in the type it should have (a
        ``finish_reason`` list, a ``model`` object or a token count of ``1e30`` would fail the record
        or the journal it is written to): anything else counts as absent."""
        choices = response.get("choices") or []
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise BackendError(f"{self.name}: response has no choices", retryable=False)
        choice = choices[0]
        message = choice.get("message")
        content, reasoning = extract_reasoning(message if isinstance(message, dict) else {})
        usage = response.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        finish, model, answer_id = choice.get("finish_reason"), response.get("model"), response.get("id")
        return ChatResult(
            content=content,
            reasoning=reasoning,
            finish_reason=finish if isinstance(finish, str) else None,
            usage=Usage(prompt_tokens=_count(usage.get("prompt_tokens")),
                        completion_tokens=_count(usage.get("completion_tokens"))),
            latency_s=latency,
            model=model if isinstance(model, str) and model else self.model,
            source=self.name,
            attempts=attempts,
            meta={"id": answer_id if isinstance(answer_id, str) else None},
        )

    # -- helpers ----------------------------------------------------------------------------------

    def _delay(self, retry: int, retry_after: float | None) -> float:
        """Backoff before retry number ``retry`` (1-based): the server's hint, else exponential + jitter."""
        if retry_after is not None:
            return max(0.0, min(retry_after, self.backoff_max_s))
        base = min(self.backoff_max_s, self.backoff_base_s * 2 ** (retry - 1))
        return base * self._rng.uniform(0.5, 1.0)

    def _scrub(self, text: str) -> str:
        """Remove the API key, URL credentials and any URL secrets from text meant for logs or errors."""
        return redact_text(text, [s for s in self._secrets if s and s != "EMPTY"])


def split_credentials(base_url: str) -> tuple[str, dict[str, str], tuple[str, str] | None]:
    """``(url, query, auth)``: ``base_url`` without user info and query, its query parameters, and the
    user info as a ``(user, password)`` pair for HTTP Basic auth (None without one).

    Why: a base URL with a query cannot simply be extended by the endpoint path (the openai SDK
    sent ``/v1?k=v/chat/completions``), and a client that keeps credentials in its URL can print
    them. Sent separately, the query goes with every request and the user info becomes Basic auth
    (what curl does with the same URL).

    >>> split_credentials("http://u:p%40ss@host:8000/v1?api_key=K")
    ('http://host:8000/v1', {'api_key': 'K'}, ('u', 'p@ss'))
    """
    parts = urlsplit(base_url)
    netloc = parts.netloc.rpartition("@")[2]
    auth = (unquote(parts.username or ""), unquote(parts.password or "")) if "@" in parts.netloc else None
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, netloc, parts.path, "", "")), query, auth


def extract_reasoning(message: dict[str, Any]) -> tuple[str, str | None]:
    """``(answer, reasoning)`` from a chat message (JSON object): a reasoning field, inline ``<think>``,
    or both.

    Servers with a reasoning parser return the thinking in an extra field; without one (or with
    a template that opens ``<think>`` in the prompt) it stays in the content, possibly as a lone
    ``</think>``. Either way the caller gets the answer alone.
    """
    content = message.get("content")
    content = content if isinstance(content, str) else ""
    parts: list[str] = []
    for name in REASONING_FIELDS:
        value = message.get(name)
        if isinstance(value, str) and value.strip():
            parts.append(value.strip())
            break
    answer, inline = split_thinking(content)
    if inline:
        parts.append(inline)
    return answer, ("\n\n".join(parts) if parts else None)


def retry_after_s(headers: Any) -> float | None:
    """Seconds from ``Retry-After-Ms`` / ``Retry-After`` (seconds or an HTTP date), or None."""
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return float(raw_ms) / 1000
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, parsed.timestamp() - time.time())


def _error_message(response: Any) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the body text (or the reason phrase)."""
    try:
        body = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return response.text.strip() or response.reason_phrase


def _count(value: Any) -> int:
    """A token count from a server: a whole number in 0 .. 2**63 - 1 (what JSON writers can store), else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2 ** 63 else 0


def _short(text: str, limit: int = 300) -> str:
    """A server's words for an error message: one line, at most ``limit`` characters."""
    return one_line(text, limit)


@register_backend("openai")
def _openai(base_url: str, model: str, *, api_key: str | None = None, concurrency: int = 16,
            max_retries: int = 5, timeout_s: float = 600, backoff_base_s: float = 0.5,
            backoff_max_s: float = 30, extra_body: dict[str, Any] | None = None,
            max_tokens: int | None = None, max_response_bytes: int | None = None) -> OpenAIBackend:
    return OpenAIBackend(base_url, model, api_key=api_key, concurrency=concurrency, max_retries=max_retries,
                         timeout_s=timeout_s, backoff_base_s=backoff_base_s, backoff_max_s=backoff_max_s,
                         extra_body=extra_body, max_tokens=max_tokens, max_response_bytes=max_response_bytes)

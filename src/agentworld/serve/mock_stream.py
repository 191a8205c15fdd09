"""``stream: true`` on the mock server: a finished completion sent as server-sent events, as vLLM and
SGLang send theirs.

Why: a client that streams (the OpenAI SDK with ``stream=True``, agent frameworks that always do)
once got a plain JSON body it could not parse as a stream and saw an empty answer with no error.
The answer is decided exactly as without streaming (:meth:`MockState.plan`); only its transport
differs: one ``chat.completion.chunk`` with the role, the reasoning and then the content in pieces
(``delta``), a last chunk with ``finish_reason``, a usage chunk when ``stream_options.include_usage``
asks for it, and ``data: [DONE]``. Failures (429, 500, 400) are answered before any event, as JSON
with their status, as those servers do.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

PIECE_CHARS = 32
"""Characters per content (or reasoning) delta: several events for any real answer."""


def wants_stream(body: Any) -> bool:
    """Whether a request body asks for a stream (``"stream": true``; anything else is not a stream)."""
    return isinstance(body, dict) and body.get("stream") is True


def wants_usage(body: Any) -> bool:
    options = body.get("stream_options") if isinstance(body, dict) else None
    return isinstance(options, dict) and options.get("include_usage") is True


def sse_events(completion: dict[str, Any], *, include_usage: bool) -> Iterator[bytes]:
    """The server-sent events of ``completion`` (a ``chat.completion`` body), ending in ``[DONE]``."""
    head = {"id": completion["id"], "object": "chat.completion.chunk", "created": completion["created"],
            "model": completion["model"]}
    choice = completion["choices"][0]
    message: dict[str, Any] = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        return b"data: " + orjson.dumps(body) + b"\n\n"

    yield chunk({"role": "assistant", "content": ""})
    fields = [k for k in message if k not in ("role", "content")] + ["content"]  # reasoning first
    for key in fields:
        text = message.get(key)
        if isinstance(text, str):
            for start in range(0, len(text), PIECE_CHARS):
                yield chunk({key: text[start:start + PIECE_CHARS]})
    yield chunk({}, choice["finish_reason"])
    if include_usage:
        yield b"data: " + orjson.dumps({**head, "choices": [], "usage": completion["usage"]}) + b"\n\n"
    yield b"data: [DONE]\n\n"

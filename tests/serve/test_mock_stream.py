"""``stream: true`` on the mock server, read by the official OpenAI client over real HTTP."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from agentworld.serve.mock_server import MockConfig, run_mock_server

MESSAGES: list[Any] = [{"role": "system", "content": "You simulate a terminal."},
                       {"role": "user", "content": "ls -la /tmp"}]


def test_a_streamed_answer_is_the_same_answer_in_deltas() -> None:
    """Streaming clients used to get a plain JSON body: no chunks, an empty answer, no error."""
    with run_mock_server(MockConfig(flavour="sglang", think_tokens=40)) as url:
        client = openai.OpenAI(base_url=url, api_key="none", max_retries=0)
        whole = client.chat.completions.create(model="mock", messages=MESSAGES)
        chunks = list(client.chat.completions.create(model="mock", messages=MESSAGES, stream=True,
                                                     stream_options={"include_usage": True}))
        deltas = [c.choices[0].delta for c in chunks if c.choices]
        content = "".join(d.content or "" for d in deltas)
        reasoning = "".join((d.model_extra or {}).get("reasoning_content") or "" for d in deltas)
        assert content == whole.choices[0].message.content and len(deltas) > 4
        assert reasoning == (whole.choices[0].message.model_extra or {})["reasoning_content"] and reasoning
        assert deltas[0].role == "assistant"
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
        assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == whole.usage.total_tokens
        raw = httpx.post(f"{url}/chat/completions",
                         json={"model": "mock", "messages": MESSAGES, "stream": True})
        assert raw.headers["content-type"].startswith("text/event-stream")
        events = [e for e in raw.text.split("\n\n") if e]
        assert all(e.startswith("data: ") for e in events) and events[-1] == "data: [DONE]"
        assert '"usage"' not in raw.text  # only when stream_options.include_usage asks


def test_a_failure_is_answered_before_any_event() -> None:
    with run_mock_server(MockConfig(error_rate=1.0)) as url:
        client = openai.OpenAI(base_url=url, api_key="none", max_retries=0)
        with pytest.raises(openai.InternalServerError, match="injected server error"):
            client.chat.completions.create(model="mock", messages=MESSAGES, stream=True)

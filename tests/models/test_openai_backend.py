"""OpenAIBackend against real HTTP on 127.0.0.1: retries, errors, reasoning, accounting, key hiding."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from agentworld.errors import BackendError
from agentworld.models import OpenAIBackend, create_backend
from agentworld.models.base import ChatRequest, ChatResult
from agentworld.models.openai_compat import retry_after_s
from agentworld.schema import Message
from agentworld.serve.mock_server import MockConfig, run_mock_server, serve_app_in_thread

SECRET = "sk-test-SECRET-0123456789"


@dataclass
class Step:
    """One scripted answer of the fake server."""

    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


def ok(content: str | None = "hello", *, finish: str = "stop", delay_s: float = 0.0,
       **message_fields: Any) -> Step:
    message = {"role": "assistant", "content": content, **message_fields}
    return Step(body={"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "served-model",
                      "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                      "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}},
                delay_s=delay_s)


def fail(status: int, message: str = "boom", headers: dict[str, str] | None = None) -> Step:
    return Step(status=status, body={"error": {"message": message, "type": "x", "code": status}},
                headers=headers or {})


class Fake:
    """A scripted OpenAI-compatible endpoint that records what it was sent."""

    def __init__(self) -> None:
        self.script: deque[Step] = deque()
        self.default = ok()
        self.bodies: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        self.inflight = 0
        self.max_inflight = 0
        self.app = FastAPI()
        self.app.post("/v1/chat/completions")(self.handle)

    async def handle(self, request: Request) -> JSONResponse:
        self.bodies.append(await request.json())
        self.auth.append(request.headers.get("authorization"))
        step = self.script.popleft() if self.script else self.default
        self.inflight += 1
        self.max_inflight = max(self.max_inflight, self.inflight)
        try:
            if step.delay_s:
                await asyncio.sleep(step.delay_s)
        finally:
            self.inflight -= 1
        body = step.body
        if step.status == 400 and "echo" in body.get("error", {}).get("message", ""):
            body = {"error": {"message": f"rejected key {self.auth[-1]}"}}
        return JSONResponse(body, status_code=step.status, headers=step.headers)


@pytest.fixture
def fake() -> Iterator[tuple[Fake, str]]:
    server = Fake()
    with serve_app_in_thread(server.app) as url:
        yield server, url


def request(content: str = "hi", **kwargs: Any) -> ChatRequest:
    return ChatRequest(messages=(Message(role="user", content=content),), **kwargs)


def call(url: str, req: ChatRequest | None = None, **options: Any) -> ChatResult:
    async def go() -> ChatResult:
        options.setdefault("backoff_base_s", 0.01)
        backend = OpenAIBackend(url, "test-model", **options)
        try:
            return await backend.complete(req or request())
        finally:
            await backend.aclose()

    return asyncio.run(go())


# -- retries and errors --------------------------------------------------------------------------


def test_retries_500_and_429_then_succeeds(fake: tuple[Fake, str]) -> None:
    server, url = fake
    server.script.extend([fail(500), fail(429, headers={"Retry-After": "0"}), fail(503), ok("done")])
    result = call(url)
    assert result.content == "done" and result.attempts == 4
    assert len(server.bodies) == 4


def test_retry_after_is_honoured(fake: tuple[Fake, str]) -> None:
    server, url = fake
    server.script.extend([fail(429, headers={"Retry-After-Ms": "400"}), ok()])
    start = time.perf_counter()
    result = call(url)
    assert result.attempts == 2 and time.perf_counter() - start >= 0.4


def test_retry_after_header_forms() -> None:
    assert retry_after_s({"retry-after": "3"}) == 3.0
    assert retry_after_s({"retry-after-ms": "250"}) == 0.25
    assert retry_after_s({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert retry_after_s({"retry-after": "soon"}) is None
    assert retry_after_s({}) is None


def test_no_retry_on_400(fake: tuple[Fake, str]) -> None:
    server, url = fake
    server.script.append(fail(400, "bad max_tokens"))
    with pytest.raises(BackendError, match="bad max_tokens") as info:
        call(url)
    assert info.value.retryable is False and info.value.status == 400
    assert "bad max_tokens" in str(info.value)
    assert len(server.bodies) == 1


def test_gives_up_after_max_retries(fake: tuple[Fake, str]) -> None:
    server, url = fake
    server.default = fail(502)
    with pytest.raises(BackendError, match="502") as info:
        call(url, max_retries=2)
    assert info.value.retryable is True and info.value.status == 502
    assert len(server.bodies) == 3


def test_timeout_is_retried(fake: tuple[Fake, str]) -> None:
    server, url = fake
    server.script.extend([ok("slow", delay_s=0.8), ok("fast")])
    result = call(url, timeout_s=0.3)
    assert result.content == "fast" and result.attempts == 2


def test_connection_error_is_retryable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(BackendError, match="2 attempts") as info:
        call(f"http://127.0.0.1:{port}/v1", max_retries=1)
    assert info.value.retryable is True and "2 attempts" in str(info.value)


# -- reasoning, truncation, accounting -----------------------------------------------------------


@pytest.mark.parametrize(("step", "content", "reasoning"), [
    (ok("answer", reasoning="thought A"), "answer", "thought A"),
    (ok("answer", reasoning_content="thought B"), "answer", "thought B"),
    (ok("<think>thought C</think>\n\nanswer"), "answer", "thought C"),
    (ok("thought D\n</think>\nanswer"), "answer", "thought D"),
    (ok("plain answer"), "plain answer", None),
    (ok("answer", reasoning=None, reasoning_content="thought E"), "answer", "thought E"),
])
def test_reasoning_is_separated(fake: tuple[Fake, str], step: Step, content: str,
                                reasoning: str | None) -> None:
    server, url = fake
    server.script.append(step)
    result = call(url)
    assert result.content == content and result.reasoning == reasoning


def test_truncation_usage_latency_and_source(fake: tuple[Fake, str]) -> None:
    server, url = fake
    server.script.append(ok(None, finish="length", delay_s=0.05))
    result = call(url)
    assert result.truncated and result.finish_reason == "length" and result.content == ""
    assert result.usage.prompt_tokens == 11 and result.usage.completion_tokens == 7
    assert result.latency_s >= 0.05 and result.meta["elapsed_s"] >= result.latency_s
    assert result.source == "openai:test-model" and result.model == "served-model"
    assert not call(url).truncated


def test_request_body_uses_own_model_and_passes_settings(fake: tuple[Fake, str]) -> None:
    server, url = fake
    call(url, request(model="informational", max_tokens=64, temperature=0.2, seed=3,
                      extra={"top_k": 5}), extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    call(url, request())
    full, bare = server.bodies
    assert full["model"] == "test-model" and full["messages"] == [{"role": "user", "content": "hi"}]
    assert (full["max_tokens"], full["temperature"], full["seed"]) == (64, 0.2, 3)
    assert full["chat_template_kwargs"] == {"enable_thinking": False} and full["top_k"] == 5
    assert not {"max_tokens", "temperature", "seed", "chat_template_kwargs"} & set(bare)


def test_concurrency_is_bounded(fake: tuple[Fake, str]) -> None:
    server, url = fake
    server.default = ok(delay_s=0.1)

    async def go() -> list[ChatResult]:
        backend = OpenAIBackend(url, "m", concurrency=3)
        try:
            return await asyncio.gather(*(backend.complete(request(str(i))) for i in range(9)))
        finally:
            await backend.aclose()

    results = asyncio.run(go())
    assert len(results) == 9 and server.max_inflight == 3


# -- API key hygiene -----------------------------------------------------------------------------


def test_api_key_never_in_repr_logs_or_errors(fake: tuple[Fake, str],
                                              caplog: pytest.LogCaptureFixture) -> None:
    server, url = fake
    caplog.set_level(logging.DEBUG)
    server.script.extend([fail(500, f"upstream saw {SECRET}"), fail(400, "echo")])
    backend = OpenAIBackend(url, "m", api_key=SECRET, backoff_base_s=0.01)
    assert SECRET not in repr(backend) and SECRET not in str(backend)

    async def go() -> None:
        try:
            await backend.complete(request())
        finally:
            await backend.aclose()

    with pytest.raises(BackendError, match="HTTP 400") as info:
        asyncio.run(go())
    assert server.auth[-1] == f"Bearer {SECRET}"  # it was sent ...
    assert SECRET not in str(info.value) and SECRET not in repr(info.value)  # ... and never shown
    assert "rejected key" in str(info.value)
    assert "attempt 1/6 failed" in caplog.text
    assert SECRET not in caplog.text


def test_default_api_key_from_environment(fake: tuple[Fake, str], monkeypatch: pytest.MonkeyPatch) -> None:
    server, url = fake
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    call(url)
    monkeypatch.delenv("OPENAI_API_KEY")
    call(url)
    assert server.auth == ["Bearer env-key", "Bearer EMPTY"]


# -- registry and the mock server ----------------------------------------------------------------


def test_registered_as_openai() -> None:
    backend = create_backend("openai", base_url="http://127.0.0.1:1/v1", model="m", concurrency=2)
    assert isinstance(backend, OpenAIBackend) and backend.name == "openai:m"
    asyncio.run(backend.aclose())


@pytest.mark.parametrize("options", [{"thinking": True}, {"reasoning_field": "reasoning"},
                                     {"reasoning_field": "reasoning_content"}])
def test_against_mock_server_reasoning_modes(tmp_path: Path, options: dict[str, Any]) -> None:
    row = ('{"task": "AgentWorldBench/terminal", "id": "r1", "prompt": ["**Action:**\\nls"], '
           '"response": ["**Environment Observation:**\\na.txt"], "system_str": "sys", "turn_idx": 1}')
    (tmp_path / "d.jsonl").write_text(row + "\n")
    req = ChatRequest(messages=(Message(role="system", content="sys"),
                                Message(role="user", content="**Action:**\nls")))
    with run_mock_server(MockConfig(data=[tmp_path / "d.jsonl"], **options)) as url:
        result = call(url, req)
    expected = "**Environment Observation:**\na.txt"
    assert result.content == f"<predicted_observation>{expected}</predicted_observation>"
    assert result.reasoning and "<think>" not in result.content


LEFT_OPEN = """
import asyncio, gc, sys
from agentworld.models.openai_compat import OpenAIBackend
from agentworld.models.base import ChatRequest
from agentworld.schema import Message

backend = OpenAIBackend(sys.argv[1], "mock", max_retries=0)
request = ChatRequest(messages=[Message(role="system", content="s"), Message(role="user", content="ls")])
for _ in range(2):  # two loops in turn: the second gets a new connection pool
    print(asyncio.run(backend.complete(request)).content[:23])
del backend
gc.collect()
"""


def test_a_backend_never_closed_leaves_stderr_clean() -> None:
    """A command that drops its backend without ``aclose`` (or uses it on two loops in turn) must not
    make the HTTP library print 'Unclosed client session' / 'Unclosed connector' at exit."""
    import subprocess
    import sys

    with run_mock_server(MockConfig()) as url:
        done = subprocess.run([sys.executable, "-c", LEFT_OPEN, url], capture_output=True, text=True,
                              timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["<predicted_observation>"] * 2
    assert done.stderr == ""

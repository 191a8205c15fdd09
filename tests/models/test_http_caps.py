"""Every HTTP answer a client reads is capped: endless, lying or expanding bodies end the command in one line.

A real server on 127.0.0.1 (:mod:`hostile_http`) sends what a broken or hostile one would; the real
CLI runs in a child bounded in time and memory (:func:`fuzz_harness.run_cli`). Before the cap, an
endless ``/props`` grew ``doctor`` and an endless chat answer grew ``eval run`` by gigabytes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agentworld.errors import AgentWorldError
from agentworld.models.base import ChatRequest
from agentworld.models.openai_compat import OpenAIBackend
from agentworld.schema import Message
from eval_helpers import bench_rows, write_bench
from fuzz_harness import Outcome, assert_clean, run_cli
from hostile_http import (
    MODELS,
    Answer,
    chat_completion,
    endless_chunked,
    endless_sse,
    endless_until_close,
    gzip_bomb,
    hostile_server,
    json_answer,
    lying_length,
)

DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
MAX_RESPONSE_BYTES_ENV = "AGENTWORLD_MAX_RESPONSE_BYTES"
"""As :mod:`agentworld.http_limits` has them (spelled out: these tests also run on code without it)."""
MEMORY = 2 << 30
"""The child's address-space bound: the CLI needs about 1 GiB; the endless answers would take any amount."""
TIME_S = 60.0
ENDLESS = {"chunked": endless_chunked(), "until-close": endless_until_close(),
           "lying-length": lying_length(10 ** 12), "gzip-bomb": gzip_bomb(), "sse": endless_sse(),
           "sse-one-line": endless_sse(line_breaks=False)}


def one_line(outcome: Outcome, *needles: str) -> str:
    assert_clean(outcome)
    assert outcome.code == 2, outcome.describe()
    line = outcome.stderr.strip().splitlines()[-1]
    for needle in needles:
        assert needle in line, outcome.describe()
    return line


def _eval_run(url: str, tmp_path: Path, *extra: str) -> Outcome:
    data = write_bench(tmp_path / "data", bench_rows(1, 1))
    return run_cli(["eval", "run", "--data", str(data), "--out", str(tmp_path / "run"), "--model-base-url",
                    f"{url}/v1", "--model", "m", "--no-judge", "--max-retries", "0", "--no-progress", *extra],
                   cwd=tmp_path, timeout_s=TIME_S, memory_bytes=MEMORY)


@pytest.mark.parametrize("kind", sorted(ENDLESS))
def test_eval_run_stops_an_endless_chat_answer_with_one_line(kind: str, tmp_path: Path) -> None:
    with hostile_server({"POST /v1/chat/completions": ENDLESS[kind]}) as (url, server):
        outcome = _eval_run(url, tmp_path)
    one_line(outcome, f"{url}/v1/chat/completions", f"larger than {DEFAULT_MAX_RESPONSE_BYTES:,} bytes",
             "--max-response-bytes")
    assert server.hits == ["POST /v1/chat/completions"]  # not retried: a broken server, not bad luck


def test_the_cap_is_a_flag_and_an_environment_variable(tmp_path: Path) -> None:
    with hostile_server({"POST /v1/chat/completions": endless_chunked()}) as (url, _):
        flagged = _eval_run(url, tmp_path / "a", "--max-response-bytes", "100000")
    one_line(flagged, "larger than 100,000 bytes")
    small = chat_completion("x" * 5000)
    with hostile_server({"POST /v1/chat/completions": small}) as (url, _):
        data = write_bench(tmp_path / "b" / "data", bench_rows(1, 1))
        refused = run_cli(["eval", "run", "--data", str(data), "--out", str(tmp_path / "b" / "run"),
                           "--model-base-url", f"{url}/v1", "--model", "m", "--no-judge", "--no-progress"],
                          cwd=tmp_path, env={MAX_RESPONSE_BYTES_ENV: "4096"}, timeout_s=TIME_S)
        fits = _eval_run(url, tmp_path / "c")
    one_line(refused, "larger than 4,096 bytes", "(it declared")
    assert fits.code == 0, fits.describe()


@pytest.mark.parametrize("kind", ["chunked", "lying-length", "gzip-bomb"])
def test_doctor_stops_an_endless_props_with_one_line(kind: str, tmp_path: Path) -> None:
    routes: dict[str, Answer] = {"GET /v1/models": MODELS, "POST /v1/chat/completions": chat_completion(),
                                 "GET /props": ENDLESS[kind]}
    with hostile_server(routes) as (url, server):
        outcome = run_cli(["doctor", "--model-base-url", f"{url}/v1", "--model", "m"], cwd=tmp_path,
                          timeout_s=TIME_S, memory_bytes=MEMORY)
    one_line(outcome, f"{url}/props", "larger than")
    assert "GET /props" in server.hits


def test_doctor_stops_an_endless_model_list(tmp_path: Path) -> None:
    with hostile_server({"GET /v1/models": endless_until_close()}) as (url, _):
        outcome = run_cli(["doctor", "--model-base-url", f"{url}/v1", "--model", "m"], cwd=tmp_path,
                          timeout_s=TIME_S, memory_bytes=MEMORY)
    one_line(outcome, f"{url}/v1/models", "larger than")


def test_the_error_names_the_url_without_its_credentials() -> None:
    from agentworld.http_limits import ResponseTooLargeError

    async def ask(url: str) -> None:
        backend = OpenAIBackend(url, "m", max_retries=0, max_response_bytes=65536)
        try:
            await backend.complete(ChatRequest(messages=(Message(role="user", content="hi"),)))
        finally:
            await backend.aclose()

    with hostile_server({"POST /v1/chat/completions": endless_chunked()}) as (url, _):
        secret_url = url.replace("http://", "http://alice:hunter2@") + "/v1?api_key=sk-secretvalue1234567"
        with pytest.raises(ResponseTooLargeError, match="larger than 65,536 bytes") as caught:
            asyncio.run(ask(secret_url))
    said = str(caught.value)
    assert f"{url}/v1/chat/completions" in said
    assert "hunter2" not in said and "sk-secretvalue" not in said and "alice" not in said


def test_an_answer_under_the_cap_is_read_whole() -> None:
    async def ask(url: str) -> str:
        backend = OpenAIBackend(url + "/v1", "m", max_retries=0, max_response_bytes=1 << 20)
        try:
            result = await backend.complete(ChatRequest(messages=(Message(role="user", content="hi"),)))
        finally:
            await backend.aclose()
        return result.content

    text = "y" * 200_000  # several reads of the socket
    with hostile_server({"POST /v1/chat/completions": chat_completion(text)}) as (url, _):
        assert asyncio.run(ask(url)) == text


def test_body_limit_counts_chunks_and_refuses_a_declared_excess() -> None:
    from agentworld.http_limits import BodyLimit, ResponseTooLargeError

    body = BodyLimit("http://h/x", 10)
    body.declared("10")
    body.declared("not a number")
    for piece in (b"12345", b"67890"):
        body.add(piece)
    assert body.bytes() == b"1234567890"
    with pytest.raises(ResponseTooLargeError, match="larger than 10 bytes"):
        body.add(b"!")
    with pytest.raises(ResponseTooLargeError, match="it declared 11 bytes"):
        BodyLimit("http://h/x", 10).declared("11")


def test_the_environment_variable_must_be_a_positive_number(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentworld import http_limits
    from agentworld.http_limits import max_response_bytes

    assert (http_limits.DEFAULT_MAX_RESPONSE_BYTES, http_limits.MAX_RESPONSE_BYTES_ENV) == (
        DEFAULT_MAX_RESPONSE_BYTES, MAX_RESPONSE_BYTES_ENV)
    monkeypatch.setenv(MAX_RESPONSE_BYTES_ENV, "12345")
    assert max_response_bytes() == 12345 and max_response_bytes(7) == 7
    for bad in ("0", "-5", "lots"):
        monkeypatch.setenv(MAX_RESPONSE_BYTES_ENV, bad)
        with pytest.raises(AgentWorldError, match=MAX_RESPONSE_BYTES_ENV):
            max_response_bytes()
    monkeypatch.delenv(MAX_RESPONSE_BYTES_ENV)
    assert max_response_bytes() == DEFAULT_MAX_RESPONSE_BYTES


def test_an_error_body_is_capped_too(tmp_path: Path) -> None:
    error = json_answer({"error": "x" * 300_000}, 400)
    with hostile_server({"POST /v1/chat/completions": error}) as (url, _):
        outcome = _eval_run(url, tmp_path, "--max-response-bytes", "100000")
    one_line(outcome, "larger than 100,000 bytes")


WRONG_TYPES = [{"finish_reason": []}, {"model": {"a": 1}}, {"usage": {"prompt_tokens": 10 ** 30}},
               {"usage": {"completion_tokens": "many"}}, {"id": [1]}]


@pytest.mark.parametrize("fields", WRONG_TYPES)
def test_fields_of_the_wrong_type_count_as_absent(fields: dict[str, Any]) -> None:
    """Found by the fuzz suite: a ``finish_reason`` list escaped as a pydantic ValidationError."""
    body: dict[str, Any] = {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
    if "finish_reason" in fields:
        body["choices"][0]["finish_reason"] = fields["finish_reason"]
    else:
        body.update(fields)

    async def ask(url: str) -> Any:
        backend = OpenAIBackend(url + "/v1", "m", max_retries=0)
        try:
            return await backend.complete(ChatRequest(messages=(Message(role="user", content="hi"),)))
        finally:
            await backend.aclose()

    with hostile_server({"POST /v1/chat/completions": json_answer(body)}) as (url, _):
        result = asyncio.run(ask(url))
    assert (result.content, result.model) == ("ok", "m")
    assert result.finish_reason == (None if "finish_reason" in fields else "stop")
    assert result.usage.prompt_tokens in (0, 3) and result.usage.completion_tokens in (0, 1)
    assert result.meta["id"] is None

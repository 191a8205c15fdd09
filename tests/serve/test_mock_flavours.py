"""The mock server's flavours (vLLM, SGLang, llama.cpp), thinking budget, required key and model name."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import ValidationError

from agentworld.models.aio_transport import AioTransport
from agentworld.serve.mock_server import MockConfig, run_mock_server

PING = [{"role": "user", "content": "ls"}]


def call(url: str, method: str, path: str, body: dict[str, Any] | None = None,
         key: str = "EMPTY") -> tuple[int, Any]:
    import orjson

    async def go() -> tuple[int, Any]:
        http = AioTransport(url.rstrip("/") + "/", headers={"Authorization": f"Bearer {key}"}, params=None,
                            auth=None, timeout_s=30, connections=2)
        try:
            response = await http.request(method, path, content=orjson.dumps(body) if body else None)
        finally:
            await http.aclose()
        return response.status_code, orjson.loads(response.content)

    return asyncio.run(go())


def ask(max_tokens: int, model: str = "mock") -> dict[str, Any]:
    return {"model": model, "messages": PING, "max_tokens": max_tokens}


@pytest.mark.parametrize(("flavour", "field"), [("vllm", "reasoning"), ("sglang", "reasoning_content")])
def test_a_cut_in_the_answer_leaves_the_tag_open_and_usage_honest(flavour: str, field: str) -> None:
    with run_mock_server(MockConfig(flavour=flavour, think_tokens=100, enforce_max_tokens=True)) as url:
        _, full = call(url, "POST", "chat/completions", ask(500))
        _, cut = call(url, "POST", "chat/completions", ask(110))
        _, thinking = call(url, "POST", "chat/completions", ask(50))
        _, models = call(url, "GET", "models")
    whole = full["choices"][0]
    assert whole["finish_reason"] == "stop"
    assert whole["message"]["content"].endswith("</predicted_observation>")
    assert len(whole["message"][field]) >= 400
    needed = full["usage"]["completion_tokens"]
    assert 110 < needed < 500
    part = cut["choices"][0]
    assert part["finish_reason"] == "length" and cut["usage"]["completion_tokens"] == 110
    assert part["message"]["content"].startswith("<predicted_observation>")
    assert "</predicted_observation>" not in part["message"]["content"]
    assert part["message"][field] == whole["message"][field]
    during = thinking["choices"][0]
    assert during["finish_reason"] == "length" and during["message"]["content"] is None
    assert thinking["usage"]["completion_tokens"] == 50 and len(during["message"][field]) == 200
    assert models["data"][0]["max_model_len"] == 40960 and models["data"][0]["owned_by"] == flavour


def test_llamacpp_thinks_inline_and_reports_n_ctx_in_props() -> None:
    with run_mock_server(MockConfig(flavour="llamacpp", context_tokens=8192, model_name="q4.gguf")) as url:
        status, answer = call(url, "POST", "chat/completions", {"model": "anything", "messages": PING})
        _, props = call(url.removesuffix("/v1"), "GET", "props")
    content = answer["choices"][0]["message"]["content"]
    assert status == 200 and content.startswith("<think>\n")
    assert "</think>\n\n<predicted_observation>" in content
    assert props["default_generation_settings"]["n_ctx"] == 8192


def test_key_and_model_name_are_checked_like_real_servers() -> None:
    with run_mock_server(MockConfig(token="k-123", flavour="vllm", model_name="served")) as url:
        denied = call(url, "GET", "models", key="other")
        refused = call(url, "POST", "chat/completions", {"model": "served", "messages": PING})
        unknown = call(url, "POST", "chat/completions", {"model": "other", "messages": PING}, key="k-123")
        ok = call(url, "POST", "chat/completions", {"model": "served", "messages": PING}, key="k-123")
    assert denied == refused == (401, {"error": {"message": "Incorrect API key provided.",
                                                 "type": "invalid_request_error", "param": None,
                                                 "code": "invalid_api_key"}})
    assert unknown[0] == 404 and unknown[1]["error"]["message"] == "The model `other` does not exist."
    assert ok[0] == 200


def test_defaults_are_unchanged() -> None:
    with run_mock_server(MockConfig()) as url:
        _, models = call(url, "GET", "models")
        status, answer = call(url, "POST", "chat/completions", ask(1, model="x"))
    assert models["data"] == [{"id": "mock", "object": "model", "created": 0, "owned_by": "agentworld-mock"}]
    assert status == 200 and answer["choices"][0]["finish_reason"] == "stop"
    assert answer["choices"][0]["message"] == {
        "role": "assistant",
        "content": "<predicted_observation>\n**Environment Observation:**\nCommand completed successfully.\n"
                   "</predicted_observation>"}


def test_a_flavour_decides_where_reasoning_goes() -> None:
    with pytest.raises(ValidationError, match="--flavour decides where the reasoning goes"):
        MockConfig(flavour="vllm", reasoning_field="reasoning_content")

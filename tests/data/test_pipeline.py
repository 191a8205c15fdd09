"""Pipeline config, end-to-end streaming run, stats.json, clean reruns and the ``agentworld data`` CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.cli import app as root
from agentworld.corpus import corpus_path
from agentworld.data.pipeline import PipelineConfig, iter_samples, run_pipeline
from agentworld.errors import DataError

runner = CliRunner()
TAU = Path(__file__).parents[3] / "shared" / "data" / "tau_bench_airline_gpt4o_dev.json"


def _config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "pipeline.yaml"
    path.write_text(body)
    return path


def test_config_loads_yaml_with_paths_relative_to_it(tmp_path: Path) -> None:
    path = _config(tmp_path, f"inputs: [{{path: {corpus_path('terminal')}}}]\n"
                             "steps: [skip_retry_cycles, dedup]\noutput: {path: out/s.jsonl}\n")
    config = PipelineConfig.load(path)
    assert [s.name for s in config.steps] == ["skip_retry_cycles", "expand", "dedup"]  # expand added
    assert config.output.path == tmp_path / "out" / "s.jsonl"


HEAD = "inputs: [{path: a}]\noutput: {path: o}\n"


@pytest.mark.parametrize(("body", "field", "message"), [
    ("inputs: []\noutput: {path: o}\n", "inputs", "at least 1"),
    (HEAD + "steps: [expand, shuffle]\n", "steps.1", "unknown step"),
    (HEAD + "steps: [{name: dedup, options: {x: 1}}]\n", "steps.0", "unknown option"),
    (HEAD + "steps: [{name: mask, options: {seed: 1}}]\n", "steps.0", "use the 'mask' section"),
    (HEAD + "steps: [expand, drop_no_change]\n", "steps", "before 'expand'"),
    (HEAD + "steps: [dedup, expand]\n", "steps", "after 'expand'"),
    (HEAD + "mask: {keep_ratios: {echo: 2}}\n", "mask.keep_ratios", "within"),
    ("inputs: [{path: a}]\noutputs: {path: o}\n", "output", "Field required"),
])
def test_config_errors_name_file_and_field(tmp_path: Path, body: str, field: str, message: str) -> None:
    path = _config(tmp_path, body)
    with pytest.raises(DataError, match=message) as info:
        PipelineConfig.load(path)
    assert info.value.path == str(path) and info.value.field == field


def test_bad_yaml_names_the_line(tmp_path: Path) -> None:
    path = _config(tmp_path, "inputs: [\n  {path: a\noutput: x\n")
    with pytest.raises(DataError, match="malformed YAML") as info:
        PipelineConfig.load(path)
    assert info.value.path == str(path) and info.value.line is not None


def test_run_writes_samples_and_stats_and_reruns_cleanly(tmp_path: Path) -> None:
    inputs = [{"path": str(corpus_path("terminal"))}] + ([{"path": str(TAU)}] if TAU.exists() else [])
    config = PipelineConfig.model_validate({"inputs": inputs, "output": {"path": str(tmp_path / "o/s.jsonl")},
                                            "split": {"eval_fraction": 0.5, "key": "trajectory_id"}})
    report = run_pipeline(config, progress=False)
    out, held = tmp_path / "o" / "s.jsonl", tmp_path / "o" / "s_eval.jsonl"
    train, evals = ([json.loads(line) for line in path.read_text().splitlines()] for path in (out, held))
    rows = train + evals
    assert len(rows) == report.dataset.samples == report.steps[-1].outputs
    assert [s.step for s in report.steps] == ["ingest", "skip_retry_cycles", "drop_no_change", "expand",
                                              "dedup", "mask", "split"]
    assert all(r["mask"]["category"] for r in rows)
    assert {r["split"] for r in train} == {"train"} and {r["split"] for r in evals} == {"eval"}
    assert (len(train), len(evals)) == (report.steps[-1].details["train"], report.steps[-1].details["eval"])
    stats = json.loads((tmp_path / "o" / "stats.json").read_text())
    assert stats["dataset"]["samples"] == len(rows) and stats["steps"][0]["step"] == "ingest"
    assert stats["output"]["eval_out"] == str(held) and stats["output"]["eval_rows"] == len(evals)
    before = out.read_bytes(), held.read_bytes()
    run_pipeline(config, progress=False)
    assert (out.read_bytes(), held.read_bytes()) == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["s.jsonl", "s_eval.jsonl", "stats.json"]
    assert sum(1 for _ in iter_samples(config)) == len(rows)


def test_bench_export_of_the_pipeline_reproduces_the_corpus(tmp_path: Path) -> None:
    pytest.importorskip("agentworld.data.export")
    out = tmp_path / "bench.jsonl"
    config = PipelineConfig.model_validate({"inputs": [{"path": str(corpus_path("terminal"))}],
                                            "steps": ["expand"],
                                            "output": {"format": "agentworld-bench", "path": str(out)}})
    run_pipeline(config, progress=False)
    assert out.read_bytes() == corpus_path("terminal").read_bytes()


def test_cli_convert_process_stats(tmp_path: Path) -> None:
    unified = tmp_path / "unified.jsonl"
    result = runner.invoke(root, ["data", "convert", "--data", str(corpus_path("terminal")),
                                  "--out", str(unified)])
    assert result.exit_code == 0, result.output
    assert json.loads(unified.read_text().splitlines()[0])["id"] == "env-variables"
    config = _config(tmp_path, "inputs: [{path: unified.jsonl}]\nsplit: {eval_fraction: 0}\n"
                               "output: {path: out/s.jsonl}\n")
    result = runner.invoke(root, ["data", "process", "--config", str(config), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "stats.json").exists()
    result = runner.invoke(root, ["data", "stats", "--data", str(tmp_path / "out" / "s.jsonl"), "--json"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["domains"] == {"terminal": data["samples"]} and set(data["categories"]) <= {
        "state_change", "retrieval", "expansion", "error", "boilerplate", "echo", "empty"}
    html = tmp_path / "stats.html"
    result = runner.invoke(root, ["data", "stats", "--data", str(unified), "--out", str(html)])
    assert result.exit_code == 0 and "│" in result.output and "observation tokens" in result.output
    assert "<svg" in html.read_text() and "terminal" in html.read_text()


def test_cli_reports_data_errors_with_location(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    good = {"task": "terminal", "id": "a-t1", "prompt": ["x"], "response": ["y"], "system_str": ""}
    bad.write_text(json.dumps(good) + "\n{oops\n")
    result = runner.invoke(root, ["data", "convert", "--data", str(bad), "--out", str(tmp_path / "u.jsonl")])
    assert result.exit_code == 2 and f"{bad}:2" in result.output
    assert not (tmp_path / "u.jsonl").exists()
    result = runner.invoke(root, ["data", "convert", "--data", str(bad), "--out", str(tmp_path / "u.jsonl"),
                                 "--on-error", "skip"])
    assert result.exit_code == 0 and "skipped 1" in result.output

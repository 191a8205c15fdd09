"""Run folders: a folder that is not an eval run is never written to; runs of the previous layout resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.eval import EvalConfig, run_eval
from agentworld.eval.runfolder import RUN_FORMAT, is_run_config
from eval_helpers import bench_rows, scripted_judge, scripted_model, write_bench

runner = CliRunner()


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every path under ``folder`` with its bytes (folders as b""), so any change at all shows."""
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"")
            for p in sorted(folder.rglob("*"))}


def _foreign(tmp_path: Path) -> Path:
    """The results folder of some other tool: files with the names a run uses, one without a final newline."""
    folder = tmp_path / "theirs"
    (folder / "sub").mkdir(parents=True)
    (folder / "config.json").write_text('{"model": "gpt-x", "temperature": 0.2}\n')
    (folder / "scores.json").write_text('{"overall": 61.5}\n')
    (folder / "predictions.jsonl").write_text('{"id": "a", "gen": "x"}\n{"id": "b", "gen": "y"}')
    (folder / "sub" / "notes.txt").write_text("keep me")
    return folder


@pytest.mark.parametrize("command", [
    ["eval", "run", "--model", "scripted", "--no-judge", "--out"],
    ["eval", "infer", "--model", "scripted", "--out"],
    ["eval", "run", "--model", "scripted", "--judge-model", "scripted", "--out"],
    ["eval", "judge", "--judge-model", "scripted", "--run"],
    ["eval", "score", "--run"],
    ["eval", "report", "--run"],
])
def test_foreign_folder_is_refused_and_left_byte_identical(tmp_path: Path, command: list[str]) -> None:
    data = write_bench(tmp_path / "data", bench_rows(2))
    folder = _foreign(tmp_path)
    before = _snapshot(folder)
    extra = [] if command[1] in ("judge", "score", "report") else ["--data", str(data), "--no-progress"]
    result = runner.invoke(app, [*command, str(folder), *extra])
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and "not an agentworld eval" in result.output
    assert _snapshot(folder) == before


def test_a_file_as_out_is_refused(tmp_path: Path) -> None:
    data = write_bench(tmp_path / "data", bench_rows(1))
    target = tmp_path / "results.txt"
    target.write_text("mine")
    result = runner.invoke(app, ["eval", "run", "--data", str(data), "--model", "scripted", "--no-judge",
                                 "--out", str(target), "--no-progress"])
    assert result.exit_code == 2 and "is not a folder" in result.output
    assert target.read_text() == "mine"


def test_new_empty_and_own_folders_are_used(tmp_path: Path) -> None:
    write_bench(tmp_path / "data", bench_rows(2))
    empty = tmp_path / "empty"
    empty.mkdir()
    for out in (tmp_path / "new" / "nested", empty):
        config = EvalConfig(data=[tmp_path / "data"], out=out, model="m", judge_model="j", progress=False)
        report = run_eval(config, model=scripted_model(), judge=scripted_judge())
        assert report.overall.valid == 6
        stored = json.loads((out / "config.json").read_text())
        assert stored["format"] == RUN_FORMAT and is_run_config(stored)


def test_run_of_the_previous_layout_resumes_without_new_requests(tmp_path: Path) -> None:
    """config.json as the previous version wrote it (no marker, no model_corpus) is still a run."""
    write_bench(tmp_path / "data", bench_rows(2))
    config = EvalConfig(data=[tmp_path / "data"], out=tmp_path / "run", model="m", judge_model="j",
                        progress=False)
    run_eval(config, model=scripted_model(), judge=scripted_judge())
    path = tmp_path / "run" / "config.json"
    stored = json.loads(path.read_text())
    previous = {"infer": stored["infer"], "judge": stored["judge"]}
    assert set(previous["infer"]) == {"data", "model", "model_base_url", "max_tokens", "temperature", "limit",
                                      "domains", "data_sha256"}
    path.write_text(json.dumps(previous))
    model, judge = scripted_model(), scripted_judge()
    report = run_eval(config, model=model, judge=judge)
    assert model.calls == [] and judge.calls == [] and report.overall.valid == 6
    score = runner.invoke(app, ["eval", "score", "--run", str(tmp_path / "run"), "--json"])
    assert score.exit_code == 0 and json.loads(score.output)["overall"]["valid"] == 6

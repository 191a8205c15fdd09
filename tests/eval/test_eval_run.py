"""Whole runs with scripted backends: caching, re-judging, retries, resume, refusals, failures, A/B modes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agentworld.errors import BackendError, ConfigMismatchError, DataError
from agentworld.eval import EvalConfig, JudgeConfig, run_eval, run_judge, score_run
from agentworld.eval.runner import journal_ids
from agentworld.io import read_journal
from agentworld.models.base import ChatRequest, ChatResult
from agentworld.models.scripted import ScriptedBackend
from eval_helpers import MALFORMED, VERDICT, bench_rows, scripted_judge, scripted_model, write_bench


def _config(tmp_path: Path, **changes: object) -> EvalConfig:
    values: dict[str, object] = {"data": [tmp_path / "data"], "out": tmp_path / "run", "model": "m",
                                 "judge_model": "j", "progress": False, "rules": False, "concurrency": 4}
    values.update(changes)
    return EvalConfig.model_validate(values)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_bench(tmp_path / "data", bench_rows(3))


def test_rejudge_never_repredicts_and_same_judge_replays_cache(tmp_path: Path, data: Path) -> None:
    model = scripted_model()
    run_eval(_config(tmp_path, no_judge=True), model=model)
    assert len(model.calls) == 9
    first = scripted_judge()
    report = run_eval(_config(tmp_path), model=model, judge=first)
    assert len(model.calls) == 9 and len(first.calls) == 9
    assert report.overall.valid == 9
    other = ScriptedBackend(default=VERDICT, name="scripted-judge-2")
    rejudge = JudgeConfig(run=tmp_path / "run", judge_model="j2", progress=False, rules=False)
    again = run_judge(rejudge, judge=other)
    assert len(other.calls) == 9 and again.overall.valid == 9
    assert len(list((tmp_path / "run").glob("judgments.*.jsonl"))) == 1       # the j judgments were archived
    replay = ScriptedBackend(default=VERDICT, name="scripted-judge-2")
    (tmp_path / "run" / "judgments.jsonl").unlink()
    run_judge(rejudge, judge=replay)
    assert replay.calls == [] and len(journal_ids(tmp_path / "run" / "judgments.jsonl")) == 9


def test_judge_retries_are_separate_cached_attempts(tmp_path: Path, data: Path) -> None:
    judge = scripted_judge(MALFORMED, MALFORMED, VERDICT, MALFORMED, MALFORMED, MALFORMED)
    report = run_eval(_config(tmp_path, concurrency=1), model=scripted_model(), judge=judge)
    rows = {r["id"]: r for r in read_journal(tmp_path / "run" / "judgments.jsonl")}
    assert rows["t0-1"]["attempts"] == 3 and not rows["t0-1"]["failed"]
    assert rows["t0-2"]["failed"] and rows["t0-2"]["error"] == "Judge scoring failed"
    assert report.domains["terminal"].judge_failures == 1 and report.overall.failed == 1
    keys = [r["key"] for r in read_journal(tmp_path / "run" / "cache.jsonl")]
    assert len(keys) == len(set(keys)) == 9 + len(judge.calls)
    assert sorted(k.rsplit("#", 1)[1] for k in keys)[-1] == "2"
    replay = scripted_judge()
    (tmp_path / "run" / "judgments.jsonl").unlink()
    run_eval(_config(tmp_path), model=scripted_model(), judge=replay)
    assert replay.calls == []


def test_resume_after_torn_journals_sends_nothing_and_keeps_one_row_each(tmp_path: Path, data: Path) -> None:
    run_eval(_config(tmp_path), model=scripted_model(), judge=scripted_judge())
    run = tmp_path / "run"
    for name, keep in (("predictions.jsonl", 4), ("judgments.jsonl", 2)):
        lines = (run / name).read_text().splitlines(keepends=True)
        (run / name).write_text("".join(lines[:keep]) + lines[keep][:20])         # crash mid-line
    model, judge = scripted_model(), scripted_judge()
    report = run_eval(_config(tmp_path, concurrency=2), model=model, judge=judge)
    assert model.calls == [] and judge.calls == []                             # all replayed from cache.jsonl
    for name in ("predictions.jsonl", "judgments.jsonl"):
        ids = journal_ids(run / name)
        assert sorted(ids) == sorted(set(ids)) and len(ids) == 9
    assert report.overall.valid == 9


def test_changed_config_is_refused_with_the_differing_fields(tmp_path: Path, data: Path) -> None:
    run_eval(_config(tmp_path), model=scripted_model(), judge=scripted_judge())
    before = (tmp_path / "run" / "config.json").read_text()
    with pytest.raises(ConfigMismatchError, match=r"temperature: 0\.6 -> 0\.7"):
        run_eval(_config(tmp_path, temperature=0.7), model=scripted_model(), judge=scripted_judge())
    with pytest.raises(ConfigMismatchError, match="judge_model: 'j' -> 'k'"):
        run_eval(_config(tmp_path, judge_model="k"), model=scripted_model(), judge=scripted_judge())
    write_bench(tmp_path / "data", bench_rows(3, prefix="u"))
    with pytest.raises(ConfigMismatchError, match="data_sha256"):
        run_eval(_config(tmp_path), model=scripted_model(), judge=scripted_judge())
    assert (tmp_path / "run" / "config.json").read_text() == before
    write_bench(tmp_path / "data", bench_rows(3))
    run_eval(_config(tmp_path, concurrency=1, progress=True), model=scripted_model(), judge=scripted_judge())
    assert "api_key" not in before and "concurrency" not in before


def test_backend_failure_is_recorded_and_retried_on_resume(tmp_path: Path, data: Path) -> None:
    def flaky(request: ChatRequest) -> str:
        if "echo t1-1" in request.messages[-1].content:
            raise BackendError("HTTP 500 after retries", retryable=True)
        return "<predicted_observation></predicted_observation>" if "t2-0" in request.messages[-1].content \
            else "<predicted_observation>x</predicted_observation>"

    judge = scripted_judge()
    report = run_eval(_config(tmp_path), model=ScriptedBackend(default=flaky), judge=judge)
    rows = {r["id"]: r for r in read_journal(tmp_path / "run" / "predictions.jsonl")}
    assert "HTTP 500" in rows["t1-2"]["error"]
    assert rows["t2-1"]["raw"] == "<predicted_observation></predicted_observation>"
    assert report.domains["terminal"].prediction_errors == 1 and report.overall.failed == 1
    assert len(judge.calls) == 8
    report = run_eval(_config(tmp_path), model=scripted_model(), judge=scripted_judge())
    assert report.overall.valid == 9 and report.domains["terminal"].prediction_errors == 0


def test_empty_generation_is_not_judged_but_counted(tmp_path: Path, data: Path) -> None:
    judge = scripted_judge()
    report = run_eval(_config(tmp_path), model=ScriptedBackend(default=""), judge=judge)
    assert judge.calls == []
    terminal = report.domains["terminal"]
    assert (terminal.no_generation, terminal.valid, terminal.failed, terminal.judge_failures) == (9, 0, 9, 0)
    rows = list(read_journal(tmp_path / "run" / "judgments.jsonl"))
    assert {r["error"] for r in rows} == {"No model generation"}


def test_bad_input_names_file_line_field_and_keeps_the_run(tmp_path: Path, data: Path) -> None:
    run_eval(_config(tmp_path), model=scripted_model(), judge=scripted_judge())
    snapshot = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()}
    rows = bench_rows(3)
    rows[2]["turn_idx"] = "two"
    write_bench(tmp_path / "data", rows)
    with pytest.raises(DataError, match="turn_idx") as info:
        run_eval(_config(tmp_path), model=scripted_model(), judge=scripted_judge())
    message = str(info.value)
    assert f"{data}:3" in message and "'t0-3'" in message and "'turn_idx'" in message
    assert {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()} == snapshot
    write_bench(tmp_path / "data", bench_rows(3))
    with pytest.raises(DataError, match="unknown domain"):
        run_eval(_config(tmp_path, domains=["terminal,bogus"]), model=scripted_model())


def test_turing_and_reference_modes(tmp_path: Path, data: Path) -> None:
    judge = ScriptedBackend(default="The first looks real. \\boxed{A}")
    report = run_eval(_config(tmp_path, judge_mode="turing"), model=scripted_model(), judge=judge)
    rows = list(read_journal(tmp_path / "run" / "judgments.jsonl"))
    assert all(r["correct"] == (r["position"] == "B") for r in rows)          # real text sits opposite
    assert report.turing is not None
    fooled = sum(r["position"] == "A" for r in rows) / 9
    assert report.turing["overall"]["fooling_rate"] == pytest.approx(fooled)
    assert "Ground Truth" not in judge.calls[0].messages[-1].content
    ref_config = _config(tmp_path, out=tmp_path / "ref", judge_mode="reference",
                         reference_run=tmp_path / "run")
    ref = run_eval(ref_config,
                   model=ScriptedBackend(default="<predicted_observation>nah</predicted_observation>"),
                   judge=ScriptedBackend(default="\\boxed{B}"))
    assert ref.reference is not None and ref.reference["overall"]["valid"] == 9
    scores = json.loads((tmp_path / "ref" / "scores.json").read_text())
    assert scores["reference"]["overall"]["win_rate"] == ref.reference["overall"]["win_rate"]
    assert score_run(tmp_path / "ref").reference == ref.reference


class _HeldJudge:
    """A judge that holds every judging until the world model has answered ``total`` requests."""

    name = "held-judge"

    def __init__(self, model: ScriptedBackend, total: int) -> None:
        self.model, self.total, self.starved = model, total, 0

    async def complete(self, request: ChatRequest) -> ChatResult:
        for _ in range(1000):                     # generous: 10 s of polling, never reached when pipelined
            if len(self.model.calls) >= self.total:
                return ChatResult(content=VERDICT)
            await asyncio.sleep(0.01)
        self.starved += 1
        return ChatResult(content=VERDICT)


def test_judging_never_holds_up_predictions(tmp_path: Path, data: Path) -> None:
    """Pipelined stages: with every judge request held open, all 9 predictions still go out (2 at a time)."""
    model = scripted_model()
    judge = _HeldJudge(model, total=9)
    report = run_eval(_config(tmp_path, concurrency=2), model=model, judge=judge)
    assert judge.starved == 0 and len(model.calls) == 9 and report.overall.valid == 9


@pytest.mark.parametrize("content", ["", "\n\n"])
def test_an_empty_data_file_is_one_line_and_exit_2(tmp_path: Path, content: str) -> None:
    """A 0-sample run used to finish with exit 0 (``data convert`` refuses the same file)."""
    from typer.testing import CliRunner

    from agentworld.cli import app

    data = tmp_path / "terminal_test.jsonl"
    data.write_text(content)
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "run", "--data", str(data), "--model", "retrieval",
                                      "--no-judge", "--out", str(out), "--no-progress"])
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1 and str(data) in result.output
    assert "no samples" in result.output and not out.exists()


def test_a_full_disk_is_the_runs_error_not_a_samples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC while journaling predictions: one line naming the file, exit 2, no sample recorded as
    failed; the same command, once there is room again, finishes the run."""
    import errno
    import os

    from typer.testing import CliRunner

    from agentworld.cli import app

    data = write_bench(tmp_path / "data", bench_rows(6))
    out = tmp_path / "run"
    real_fsync = os.fsync
    written: list[int] = []

    def full_after_two(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith("predictions.jsonl"):
            written.append(fd)
            if len(written) > 2:
                raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    args = ["eval", "run", "--data", str(data), "--model", "retrieval", "--model-corpus", str(data),
            "--no-judge", "--out", str(out), "--no-progress", "--concurrency", "1"]
    monkeypatch.setattr("agentworld.io.os.fsync", full_after_two)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and [line for line in result.output.splitlines()
                                                 if not line.startswith("warning:")] == [
        f"error: disk full writing {out / 'predictions.jsonl'}: free space and run the same command to "
        "resume"]
    rows = list(read_journal(out / "predictions.jsonl"))
    assert rows and not any(row["error"] for row in rows) and not (out / "scores.json").exists()
    monkeypatch.setattr("agentworld.io.os.fsync", real_fsync)
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    rows = list(read_journal(out / "predictions.jsonl"))
    assert sorted({row["id"] for row in rows}) == sorted(r["id"] for r in bench_rows(6))
    assert not any(row["error"] for row in rows)

"""The typed run-folder reader: judgment status as a field, old run folders still read and resume."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld.errors import BackendError, DataError
from agentworld.eval import EvalConfig, RunFolder, run_eval, score_run
from agentworld.eval.report import write_report
from agentworld.io import atomic_write_jsonl, read_journal
from agentworld.models.base import ChatRequest
from agentworld.models.scripted import ScriptedBackend
from eval_helpers import VERDICT, bench_rows, scripted_judge, scripted_model, write_bench


def _config(tmp_path: Path) -> EvalConfig:
    return EvalConfig.model_validate({"data": [tmp_path / "data"], "out": tmp_path / "run", "model": "m",
                                      "judge_model": "j", "progress": False, "rules": False,
                                      "concurrency": 2})


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_bench(tmp_path / "data", bench_rows(3))


def judge_failing_on(sample_action: str) -> ScriptedBackend:
    def answer(request: ChatRequest) -> str:
        if sample_action in request.messages[-1].content:
            raise BackendError("HTTP 503 from the judge", retryable=True)
        return VERDICT

    return ScriptedBackend(default=answer, name="scripted-judge")


def test_rows_carry_a_typed_status_and_an_api_error_is_judged_again(tmp_path: Path, data: Path) -> None:
    run_eval(_config(tmp_path), model=scripted_model(), judge=judge_failing_on("echo t1-2"))
    judged = RunFolder(tmp_path / "run").judgments()
    assert judged["t1-3"].status == "api_error" and judged["t1-3"].failed
    assert judged["t1-3"].error is not None and judged["t1-3"].error.startswith("BackendError: HTTP 503")
    assert {row.status for key, row in judged.items() if key != "t1-3"} == {"ok"}
    stored = {r["id"]: r for r in read_journal(tmp_path / "run" / "judgments.jsonl")}
    assert stored["t1-3"]["status"] == "api_error" and stored["t1-3"]["failed"] is True  # both written
    again = scripted_judge()
    report = run_eval(_config(tmp_path), model=scripted_model(), judge=again)
    assert len(again.calls) == 1 and report.overall.valid == 9
    assert RunFolder(tmp_path / "run").judgments()["t1-3"].status == "ok"


def test_a_run_folder_of_the_old_format_still_reads_scores_reports_and_resumes(tmp_path: Path,
                                                                              data: Path) -> None:
    run_eval(_config(tmp_path), model=scripted_model(), judge=scripted_judge())
    run = tmp_path / "run"
    old = []
    for row in read_journal(run / "judgments.jsonl"):  # rewritten as versions before `status` wrote them
        row.pop("status")
        if row["id"] == "t0-1":
            row.update(failed=True, error="backend: BackendError: HTTP 503", scores={}, total_score=0.0)
        if row["id"] == "t0-2":
            row.update(failed=True, error="Judge scoring failed", scores={}, total_score=0.0)
        old.append(row)
    atomic_write_jsonl(run / "judgments.jsonl", old)
    (run / "scores.json").unlink()
    statuses = {k: r.status for k, r in RunFolder(run).judgments().items()}
    assert (statuses.pop("t0-1"), statuses.pop("t0-2")) == ("api_error", "parse_error")
    assert set(statuses.values()) == {"ok"}
    scored = score_run(run).domains["terminal"]
    assert (scored.valid, scored.failed, scored.judge_failures) == (7, 2, 2)
    assert "judge failed: api_error" in write_report(run).read_text()
    judge = scripted_judge()
    report = run_eval(_config(tmp_path), model=scripted_model(), judge=judge)
    assert report.overall.valid == 8 and judge.calls == []  # t0-1 judged again, its answer from the cache
    judged = RunFolder(run).judgments()
    assert (judged["t0-1"].status, judged["t0-2"].status) == ("ok", "parse_error")


def test_a_row_that_is_not_a_record_is_a_located_error(tmp_path: Path, data: Path) -> None:
    run_eval(_config(tmp_path), model=scripted_model(), judge=scripted_judge())
    path = tmp_path / "run" / "predictions.jsonl"
    rows = list(read_journal(path))
    rows[1]["usage"] = "a lot"
    atomic_write_jsonl(path, rows)
    with pytest.raises(DataError, match="not a PredictionRow") as info:
        RunFolder(tmp_path / "run").predictions()
    assert f"{path}:2" in str(info.value) and "'usage'" in str(info.value)
    assert f"sample '{rows[1]['id']}'" in str(info.value)

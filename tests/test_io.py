"""Crash-safe output: a torn last journal line is ignored and set aside, a whole one is kept; atomic
writes never tear."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agentworld.eval import EvalConfig, run_eval
from agentworld.eval.runner import journal_ids
from agentworld.io import JsonlJournal, atomic_write_text, dropped_path, read_journal
from eval_helpers import bench_rows, scripted_judge, scripted_model, write_bench


def test_torn_tail_is_skipped_then_set_aside_and_reported(tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "j.jsonl"
    with JsonlJournal(path) as journal:
        journal.append({"id": 1})
        journal.append({"id": 2})
    whole = path.stat().st_size
    with open(path, "a") as handle:
        handle.write('{"id": 3, "trunc')
    assert [r["id"] for r in read_journal(path)] == [1, 2]
    with caplog.at_level(logging.WARNING, logger="agentworld.io"), JsonlJournal(path) as journal:
        journal.append({"id": 4})
    assert [r["id"] for r in read_journal(path)] == [1, 2, 4]
    assert dropped_path(path).read_text() == '{"id": 3, "trunc\n'    # nothing is lost
    (message,) = [r.getMessage() for r in caplog.records]
    assert str(path) in message and f"at byte {whole}" in message and '\'{"id": 3, "trunc\'' in message
    with open(path, "a") as handle:
        handle.write("\n\n{]")                                   # a second repair adds to the side file
    with JsonlJournal(path):
        pass
    assert dropped_path(path).read_text() == '{"id": 3, "trunc\n{]\n'
    assert [r["id"] for r in read_journal(path)] == [1, 2, 4]


def test_valid_last_row_without_newline_survives(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"a":1}\n{"b":2}')                                 # e.g. written by printf
    assert list(read_journal(path)) == [{"a": 1}, {"b": 2}]
    with caplog.at_level(logging.WARNING), JsonlJournal(path) as journal:
        journal.append({"c": 3})
    assert path.read_text() == '{"a":1}\n{"b":2}\n{"c":3}\n'
    assert not dropped_path(path).exists() and not caplog.records
    big = tmp_path / "big.jsonl"                                        # a tail longer than a read block
    big.write_text('{"x": 0}\n{"x": "' + "y" * 200_000 + '"}')
    JsonlJournal(big).close()
    assert [len(str(r["x"])) for r in read_journal(big)] == [1, 200_000]


def test_eval_resume_keeps_a_last_row_missing_its_newline(tmp_path: Path) -> None:
    """Without the cache, a dropped prediction or judgment would be asked for again."""
    write_bench(tmp_path / "data", bench_rows(3))
    config = EvalConfig.model_validate({"data": [tmp_path / "data"], "out": tmp_path / "run", "model": "m",
                                        "judge_model": "j", "progress": False, "rules": False})
    run_eval(config, model=scripted_model(), judge=scripted_judge())
    run = tmp_path / "run"
    (run / "cache.jsonl").unlink()
    for name in ("predictions.jsonl", "judgments.jsonl"):
        (run / name).write_bytes((run / name).read_bytes().rstrip(b"\n"))  # killed before the newline
    model, judge = scripted_model(), scripted_judge()
    report = run_eval(config, model=model, judge=judge)
    assert model.calls == [] and judge.calls == []
    for name in ("predictions.jsonl", "judgments.jsonl"):
        ids = journal_ids(run / name)
        assert sorted(ids) == sorted(set(ids)) and len(ids) == 9
        assert not dropped_path(run / name).exists()
    assert report.overall.valid == 9


def test_atomic_write_replaces_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "f.txt"
    atomic_write_text(path, "one")
    atomic_write_text(path, "two")
    assert path.read_text() == "two"
    assert [p.name for p in path.parent.iterdir()] == ["f.txt"]

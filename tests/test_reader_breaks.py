"""The breaks the readers' fuzz suite found on the code before issue 31's fixes, one example each.

``tests/fuzz/test_readers.py`` generates the classes; these pin the instances it found: a FIFO (or a
directory) where a command reads a data file or a run folder's journal hung it or ended in a
traceback, ``eval score --judged`` met rows that are not objects with a traceback, an ``openai-chat``
item that is no message list did too, and ``eval run`` named ``/dev/zero`` for a link the user called
``rows.jsonl`` (and said it did not exist).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentworld.errors import DataError
from agentworld.eval.records import PredictionRow
from agentworld.eval.runfolder import read_records
from fuzz_harness import Outcome, problems, run_cli

ROW = {"task": "terminal", "id": "ls-t1", "prompt": ["**Action:**\n```bash\nls\n```"],
       "response": ["**Environment Observation:**\nroot@box:/app# ls\nnotes.txt\nroot@box:/app# "],
       "system_str": "You simulate a terminal.", "turn_idx": 1, "total_turns": 1}


def refused(outcome: Outcome, *expected: str) -> str:
    """The one red line of a clean refusal (exit 2) that says every one of ``expected``."""
    assert not problems(outcome, allow=(2,)), outcome.describe()
    line = outcome.stderr.strip().splitlines()[-1]
    assert all(part in line for part in expected), line
    return line


@pytest.fixture
def rows(tmp_path: Path) -> Path:
    (tmp_path / "rows.jsonl").write_text(json.dumps(ROW) + "\n")
    return tmp_path / "rows.jsonl"


@pytest.mark.parametrize("argv", [
    ["data", "convert", "--data", "fifo.jsonl", "--out", "u.jsonl"],
    ["data", "stats", "--data", "fifo.jsonl"],
    ["data", "export", "--data", "fifo.jsonl", "--format", "trl", "--out", "train.jsonl"],
    ["eval", "score", "--judged", "fifo.jsonl"],
    ["eval", "run", "--model", "retrieval", "--model-corpus", "fifo.jsonl", "--data", "rows.jsonl",
     "--no-judge", "--out", "run"],
    ["eval", "run", "--model", "retrieval", "--data", "fifo.jsonl", "--no-judge", "--out", "run"],
], ids=lambda argv: " ".join(argv[:2]) + (" --model-corpus" if "--model-corpus" in argv else ""))
def test_a_fifo_as_a_data_file_is_refused_at_once(argv: list[str], rows: Path) -> None:
    os.mkfifo(rows.parent / "fifo.jsonl")
    refused(run_cli(argv, cwd=rows.parent, timeout_s=15), "fifo.jsonl", "not a regular file (a FIFO)")


@pytest.mark.parametrize(("name", "argv"), [
    ("predictions.jsonl", ["eval", "score", "--run", "run"]),
    ("rules.jsonl", ["eval", "report", "--run", "run", "--out", "report.html"]),
])
def test_a_fifo_in_a_run_folder_is_refused_at_once(name: str, argv: list[str], rows: Path) -> None:
    run = ["eval", "run", "--model", "retrieval", "--data", "rows.jsonl", "--no-judge", "--out", "run"]
    made = run_cli(run, cwd=rows.parent, timeout_s=60)
    assert made.code == 0, made.describe()
    (rows.parent / "run" / name).unlink()
    os.mkfifo(rows.parent / "run" / name)
    refused(run_cli(argv, cwd=rows.parent, timeout_s=15), name, "a FIFO")


def test_a_journal_that_is_a_directory_is_a_data_error(tmp_path: Path) -> None:
    (tmp_path / "predictions.jsonl").mkdir()
    with pytest.raises(DataError, match=r"predictions\.jsonl: not a regular file \(a directory\)"):
        read_records(tmp_path / "predictions.jsonl", PredictionRow)


@pytest.mark.parametrize(("rows", "expected"), [
    (["null"], "judged.jsonl:1: expected a JSON object, got NoneType"),
    (['[1, 2]'], "judged.jsonl:1: expected a JSON object, got list"),
    (['{"task": "terminal", "failed": 0.0, "total_score": [7]}'],
     "field 'total_score': expected a number, got list"),
    (['{"id": "a", "task": 3, "failed": 0.0}'],
     "judged.jsonl:1, sample 'a', field 'task': expected a string"),
])
def test_eval_score_judged_checks_each_row(rows: list[str], expected: str, tmp_path: Path) -> None:
    (tmp_path / "judged.jsonl").write_text("\n".join(rows) + "\n")
    refused(run_cli(["eval", "score", "--judged", "judged.jsonl"], cwd=tmp_path, timeout_s=15), expected)


def test_a_chat_item_that_is_no_message_list_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / "chat.jsonl").write_text("null\n")
    argv = ["data", "convert", "--data", "chat.jsonl", "--format", "openai-chat", "--out", "u.jsonl"]
    refused(run_cli(argv, cwd=tmp_path, timeout_s=15), "chat.jsonl:1: expected a message list")


def test_eval_run_names_a_linked_data_file_as_given(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").symlink_to("/dev/zero")
    argv = ["eval", "run", "--model", "retrieval", "--data", "rows.jsonl", "--no-judge", "--out", "run"]
    refused(run_cli(argv, cwd=tmp_path, timeout_s=15), "rows.jsonl", "a character device")
    assert not (tmp_path / "run").exists()


def test_a_dry_run_names_the_config_file_of_a_field_it_refuses(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "cfg.yaml").write_text("model: model\noutput_dir: out\nmax_steps: 1\n")
    argv = ["train", "rl", "--config", "cfg.yaml", "--dry-run"]
    refused(run_cli(argv, cwd=tmp_path, timeout_s=15), "cfg.yaml, field 'data': an RL config needs 'data'")


@pytest.mark.parametrize("field, value", [("total_turns", []), ("total_turns", "two"), ("turn_idx", 1.5)])
def test_a_row_field_of_the_wrong_type_is_a_located_error(field: str, value: object, tmp_path: Path) -> None:
    """Found by the long profile (``benchmarks/bench_fuzz.py``) after the fixes: a field no explicit
    check covered (``total_turns: []``) escaped as a pydantic ``ValidationError`` traceback."""
    (tmp_path / "rows.jsonl").write_text(json.dumps({**ROW, field: value}) + "\n")
    argv = ["eval", "run", "--model", "retrieval", "--data", "rows.jsonl", "--no-judge", "--out", "run"]
    refused(run_cli(argv, cwd=tmp_path, timeout_s=15), "rows.jsonl:1", "sample 'ls-t1'", f"field '{field}'")


def test_a_missing_file_a_config_field_names_is_named_with_the_config_file(tmp_path: Path) -> None:
    """Found by the long profile after the fixes: ``data: Infinity`` in a config file (a path that does
    not exist) was reported as ``Infinity, field 'data': …``, naming neither the config file nor where
    the value came from."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "cfg.yaml").write_text('{"model": "model", "output_dir": "out", "data": Infinity, '
                                       '"max_steps": 1}\n')
    argv = ["train", "rl", "--config", "cfg.yaml", "--dry-run"]
    refused(run_cli(argv, cwd=tmp_path, timeout_s=15), "cfg.yaml, field 'data': Infinity: no such file")

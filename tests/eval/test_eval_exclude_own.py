"""``eval run --model retrieval`` and the samples' own recordings: the warning, ``--exclude-own``, defaults.

Everything runs through the CLI on real recordings: rows of the shipped terminal corpus (user data the
corpus holds), and a fresh recording of a built-in held-out scenario in the real sandboxed shell.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.corpus import corpus_path
from agentworld.domains.base import plugin
from agentworld.io import read_journal
from agentworld.schema import trajectory_id

runner = CliRunner()
WARNING = "samples are answered from their own recording"


def _run(data: Path, out: Path, *extra: str) -> tuple[int, list[str], list[dict[str, object]]]:
    result = runner.invoke(app, ["eval", "run", "--data", str(data), "--model", "retrieval",
                                 "--out", str(out), "--no-judge", "--no-progress", *extra])
    warnings = [line for line in result.stderr.splitlines() if WARNING in line]
    preds = list(read_journal(out / "predictions.jsonl")) if (out / "predictions.jsonl").exists() else []
    return result.exit_code, warnings, preds


def _neighbours(preds: list[dict[str, object]]) -> set[str]:
    return {trajectory_id(str(p["meta"]["neighbour"]).partition("#")[0])  # type: ignore[index]
            for p in preds}


def _corpus_rows(tmp_path: Path) -> tuple[Path, set[str]]:
    rows = [json.loads(line) for line in corpus_path("terminal").read_text().splitlines()[:12]]
    data = tmp_path / "terminal_test.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data, {trajectory_id(r["id"]) for r in rows}


def test_user_data_in_the_corpus_is_warned_about_and_left_out_on_request(tmp_path: Path) -> None:
    data, own = _corpus_rows(tmp_path)
    code, warnings, preds = _run(data, tmp_path / "kept")
    assert code == 0 and len(preds) == 12
    assert warnings == [f"warning: 12 of 12 {WARNING} (the retrieval corpus holds the trajectories they were "
                        "cut from); --exclude-own leaves them out"]
    assert _neighbours(preds) <= own, "user data keeps its own recordings by default: recalled, not predicted"
    code, warnings, preds = _run(data, tmp_path / "excluded", "--exclude-own")
    assert code == 0 and len(preds) == 12 and warnings == []
    assert not _neighbours(preds) & own
    stored = json.loads((tmp_path / "excluded" / "config.json").read_text())["infer"]
    assert stored["exclude_own"] is True
    assert "exclude_own" not in json.loads((tmp_path / "kept" / "config.json").read_text())["infer"]


def test_the_choice_identifies_the_predictions(tmp_path: Path) -> None:
    data, _ = _corpus_rows(tmp_path)
    out = tmp_path / "run"
    assert _run(data, out)[0] == 0
    assert _run(data, out)[0] == 0                                      # unchanged: resumes
    result = runner.invoke(app, ["eval", "run", "--data", str(data), "--model", "retrieval",
                                 "--out", str(out), "--no-judge", "--no-progress", "--exclude-own"])
    assert result.exit_code == 2 and "exclude_own: None -> True" in result.output


def test_exclude_own_applies_to_retrieval_only(tmp_path: Path) -> None:
    data, _ = _corpus_rows(tmp_path)
    result = runner.invoke(app, ["eval", "run", "--data", str(data), "--model", "scripted", "--keep-own",
                                 "--out", str(tmp_path / "run"), "--no-judge", "--no-progress"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "--exclude-own/--keep-own applies to --model retrieval only" in lines[0]
    assert not (tmp_path / "run").exists()


@pytest.mark.sandbox
@pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("tmux") is None,
                    reason="needs bubblewrap and tmux (run ./install.sh)")
def test_builtin_heldout_recordings_are_left_out_by_default(tmp_path: Path) -> None:
    from agentworld.domains.terminal.record import load_scenarios, record_to_jsonl

    terminal = plugin("terminal")
    assert terminal is not None
    scenario = load_scenarios(terminal.data_file(terminal.heldout_scenarios) or "")[0]
    data = tmp_path / "terminal_test.jsonl"
    assert record_to_jsonl([scenario], data).rows > 0
    corpus = ("--model-corpus", str(corpus_path("terminal")), "--model-corpus", str(data))
    code, warnings, preds = _run(data, tmp_path / "default", *corpus)
    assert code == 0 and preds and warnings == []
    assert scenario.name not in _neighbours(preds), "a held-out session is predicted, never recalled"
    code, warnings, kept = _run(data, tmp_path / "kept", *corpus, "--keep-own")
    expected = (f"warning: {len(kept)} of {len(kept)} {WARNING} (the retrieval corpus holds the trajectories "
                "they were cut from); --exclude-own leaves them out")
    assert code == 0 and warnings == [expected]
    assert _neighbours(kept) == {scenario.name}

"""``agentworld demo train`` end to end on the CPU (a couple of steps; the real demo runs 150)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

pytest.importorskip("trl")
pytest.importorskip("torch")

from agentworld.train.demo import TrainDemoConfig, run_train_demo


def test_demo_train_builds_trains_and_reports(tmp_path: Path) -> None:
    config = TrainDemoConfig(out=str(tmp_path / "demo"), steps=3, predict_samples=2, max_new_tokens=16)
    result = run_train_demo(config, console=Console(file=open("/dev/null", "w")))  # noqa: SIM115
    assert result.steps == 3 and result.train_rows > 0 and result.eval_rows > 0
    assert result.eval_loss_before is not None and result.eval_loss_after is not None
    assert result.eval_loss_after < result.eval_loss_before
    saved = json.loads((tmp_path / "demo" / "result.json").read_text())
    assert saved["steps"] == 3
    assert "Tiny world model" in (tmp_path / "demo" / "report.html").read_text()
    lines = (tmp_path / "demo" / "predictions.jsonl").read_text().splitlines()
    predictions = [json.loads(line) for line in lines]
    assert len(predictions) == result.predicted == 2
    assert all(p["truth"] and {"before", "after", "rules_before"} <= p.keys() for p in predictions)
    assert result.rules_before == pytest.approx(sum(p["rules_before"] for p in predictions) / 2)
    # the trivial baselines are scored on the same rows: knowing the format beats an empty answer
    assert set(result.baselines) == {"frame_only", "empty", "repeat_previous", "constant"}
    assert result.baselines["frame_only"] > result.baselines["empty"] == 0.0
    assert saved["baselines"] == result.baselines and "skill_after" in saved
    assert result.strongest == max(result.baselines.values()) and "skill_over_strongest_after" in saved
    assert 0.0 <= result.closed_before <= 1.0 and 0.0 <= result.closed_after <= 1.0
    assert 0.0 <= result.frame_before <= 100.0 and 0.0 <= result.frame_after <= 100.0
    assert (tmp_path / "demo" / "model-init" / "config.json").exists()
    # the predicted turns are saved as AgentWorldBench rows, for eval run --model transformers:DIR
    heldout = [json.loads(line) for line in (tmp_path / "demo" / "heldout.jsonl").read_text().splitlines()]
    assert [str(r["id"]) for r in heldout] == [p["id"] for p in predictions]
    assert all(r["system_str"].startswith("You are a terminal world model") for r in heldout)
    assert all(isinstance(p["truncated_after"], bool) for p in predictions)

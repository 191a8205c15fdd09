"""Every config file shipped under examples/ and configs/ is checked by the tool that reads it.

Why a glob and a table: the CPT/SFT/RL examples once pointed at a corpus that had moved, and nothing
noticed. Files are discovered, not listed, so a config added later without a validator here fails
``test_every_shipped_config_has_a_validator``; each validator runs its file as far as it can go
without training or a GPU (``--dry-run``, the consumer's own loader). A check that needs the tiny model
or accelerate is marked with the train extra; the others run on the README's install.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable
from dataclasses import dataclass
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


Tiny = Callable[[], Path]
"""The tiny model, built on first use (only the train recipes' checks need it)."""
Check = Callable[[Path, Tiny, Path], None]


@dataclass(frozen=True)
class Validator:
    check: Check
    extra: str | None = None
    """The extra the check needs beyond the README's install (its case is marked with it)."""


def _recipe(kind: str, loader: Callable[[Path], CPTConfig | SFTConfig | RLConfig]) -> Validator:
    def check(path: Path, tiny: Tiny, tmp: Path) -> None:
        assert Path(loader(path).model).resolve() == TINY_MODEL, "the header builds tiny-model"
        result = CliRunner().invoke(app, ["train", kind, "--config", str(path), "--dry-run",
                                          "--model", str(tiny()), "--out", str(tmp / "out")])
        assert result.exit_code == 0, result.output
        report = json.loads(result.output)
        assert report["kind"] == kind and report["model_source"] == "local" and report["samples"] > 0
        assert not (tmp / "out").exists(), "a dry run writes nothing"
    return Validator(check, extra="train")


def _smollm2_sft(path: Path, _tiny: Tiny, tmp: Path) -> None:
    """The SmolLM2 recipe's config: the packaged GGUF as model; a dry run finds it and the five corpora."""
    config = SFTConfig.load(path)
    assert config.model == "smollm2" and config.prompt == "brief" and len(config.data) == 5
    result = CliRunner().invoke(app, ["train", "sft", "--config", str(path), "--dry-run",
                                      "--out", str(tmp / "out")])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["model_source"] == "gguf" and report["samples"] > 1000 and not (tmp / "out").exists()


def _pipeline(path: Path, _tiny: Tiny, _tmp: Path) -> None:
    """Every input inside the repository exists and gives samples; one outside it (the tau-bench logs in
    ``shared/data`` beside a checkout) is left out where it is not there, as on a fresh machine."""
    config = PipelineConfig.load(path)
    inside = [i for i in config.inputs if i.path.resolve().is_relative_to(ROOT)]
    missing = [str(i.path) for i in inside if not i.path.exists()]
    assert inside and not missing, f"inputs not found: {missing}"
    present = [i for i in config.inputs if i.path.exists()]
    assert next(iter_samples(config.model_copy(update={"inputs": present})), None) is not None


def _controls(path: Path, _tiny: Tiny, _tmp: Path) -> None:
    spec = load_control_spec(path)
    named = {tool for rule in spec.faults for tool in rule.tools}
    tools = {t["name"] for t in load_tools(ROOT / "examples" / "tools" / "airline_tools.json")}
    assert named <= tools, f"rules name tools the example tool list lacks: {sorted(named - tools)}"


def _tools(path: Path, _tiny: Tiny, _tmp: Path) -> None:
    ToolValidator(load_tools(path))


def _closed_loop(path: Path, _tiny: Tiny, _tmp: Path) -> None:
    assert load_tasks(path)


def _deepspeed(path: Path, _tiny: Tiny, _tmp: Path) -> None:
    from accelerate.utils.deepspeed import HfDeepSpeedConfig

    config = HfDeepSpeedConfig(str(path))
    assert config.get_value("zero_optimization.stage") in (0, 1, 2, 3)
    try:
        from deepspeed.runtime.zero.config import DeepSpeedZeroConfig  # the consumer's own schema
    except ImportError:
        return
    DeepSpeedZeroConfig(**json.loads(path.read_text())["zero_optimization"])


def _accelerate(path: Path, tiny: Tiny, tmp: Path) -> None:
    from accelerate.commands.config.config_args import load_config_from_file

    config = load_config_from_file(str(path))
    file = (getattr(config, "deepspeed_config", None) or {}).get("deepspeed_config_file")
    if file is not None:  # accelerate launch runs from the repository root (the header's command)
        assert (ROOT / file).is_file(), f"deepspeed_config_file {file} not found from the repository root"
        _deepspeed(ROOT / file, tiny, tmp)


VALIDATORS: dict[str, Validator] = {
    "examples/train/cpt.yaml": _recipe("cpt", CPTConfig.load),
    "examples/train/sft.yaml": _recipe("sft", SFTConfig.load),
    "examples/train/rl.yaml": _recipe("rl", RLConfig.load),
    "configs/train/smollm2-sft.yaml": Validator(_smollm2_sft, extra="train"),
    "examples/data/*.yaml": Validator(_pipeline),
    "examples/controls/*.yaml": Validator(_controls),
    "examples/tools/*.json": Validator(_tools),
    "examples/closed_loop/*_tasks.jsonl": Validator(_closed_loop),
    "configs/accelerate/*.yaml": Validator(_accelerate, extra="train"),
    "configs/deepspeed/*.json": Validator(_deepspeed, extra="train"),
}


def validator(name: str) -> Validator:
    found = [check for pattern, check in VALIDATORS.items() if fnmatch.fnmatch(name, pattern)]
    assert len(found) == 1, f"{name}: {len(found)} validators; map it to exactly one in VALIDATORS"
    return found[0]


def test_every_shipped_config_has_a_validator() -> None:
    names = shipped_configs()
    assert "examples/train/sft.yaml" in names and "configs/deepspeed/zero3.json" in names
    for name in names:
        validator(name)


def _cases() -> list[object]:
    """One case per shipped config, marked with the extra its check needs."""
    return [pytest.param(name, id=name, marks=[pytest.mark.extra(e)] if (e := validator(name).extra) else [])
            for name in shipped_configs()]


@pytest.mark.parametrize("name", _cases())
def test_shipped_config_is_valid(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    validator(name).check(ROOT / name, lambda: Path(request.getfixturevalue("tiny")), tmp_path)


def test_a_dry_run_names_a_model_that_is_not_a_model_folder(tmp_path: Path) -> None:
    rl = tmp_path / "rl.yaml"
    rl.write_text(yaml.safe_dump({"model": "./no-model", "output_dir": "out", "data": "moved.jsonl"}))
    result = CliRunner().invoke(app, ["train", "rl", "--config", str(rl), "--dry-run"])
    assert result.exit_code == 2
    assert f"{rl}, field 'model': {tmp_path / 'no-model'}: not a model folder" in result.output


@pytest.mark.extra("train")
def test_a_dry_run_names_a_missing_file_and_its_field(tmp_path: Path, tiny: Path) -> None:
    config = tmp_path / "sft.yaml"
    config.write_text(yaml.safe_dump({"model": str(tiny), "output_dir": "out",
                                      "data": [{"path": "corpus/terminal.jsonl"}]}))
    result = CliRunner().invoke(app, ["train", "sft", "--config", str(config), "--dry-run"])
    assert result.exit_code == 2
    missing = tmp_path / "corpus/terminal.jsonl"
    assert f"{config}, field 'data.0.path': {missing}: no such file" in result.output
    rl = tmp_path / "rl.yaml"
    rl.write_text(yaml.safe_dump({"model": "./no-model", "output_dir": "out", "data": "moved.jsonl"}))
    result = CliRunner().invoke(app, ["train", "rl", "--config", str(rl), "--dry-run", "--model", str(tiny)])
    assert result.exit_code == 2
    assert f"{rl}, field 'data': {tmp_path / 'moved.jsonl'}: no such file" in result.output

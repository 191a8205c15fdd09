"""``train cpt|sft|rl --dry-run``: a recipe's config checked as far as it goes without training.

Why: a config that points at a moved corpus, or at a model folder nobody built, should fail in a
second with the file named, not after a model has loaded or a GPU was booked. The check reads
every input the run would read, through the same readers (the data pipeline for CPT/SFT, the
AgentWorldBench reader for RL), so the fields of the data are validated too; it resolves the model
(a local folder must hold a ``config.json``; a hub id cannot be looked up offline and is only
named) and says how many samples the run would see. Nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agentworld.errors import DataError
from agentworld.train.config import TrainCommon
from agentworld.train.rl import RLConfig

__all__ = ["DryRun", "check_model", "dry_run"]


@dataclass(frozen=True)
class DryRun:
    """What a recipe would run on: its model, where it writes, and the samples its data yields."""

    kind: str
    model: str
    model_source: Literal["local", "hub", "gguf"]
    output_dir: Path
    samples: int


def _looks_local(model: str) -> bool:
    path = Path(model)
    return (model.startswith(("./", "../", "~")) or path.is_absolute() or path.exists()
            or ".." in path.parts)


def check_model(model: str) -> Literal["local", "hub", "gguf"]:
    """``local`` for a model folder that holds ``config.json``, ``gguf`` for a GGUF file or a packaged alias
    (``smollm2``), ``hub`` for a Hugging Face id.

    Raises:
        DataError: a local path (absolute, ``./``/``../``-relative, or existing) that is not a model folder,
            or an alias whose package is not installed.
    """
    from agentworld.errors import AgentWorldError
    from agentworld.models.packaged import PACKAGED, is_gguf, resolve_model_path

    if model in PACKAGED or is_gguf(model):
        try:
            path = resolve_model_path(model)
        except AgentWorldError as exc:
            raise DataError(str(exc), field="model") from None
        if not path.is_file():
            raise DataError("no such GGUF file", path=str(path), field="model")
        return "gguf"
    if not _looks_local(model):
        return "hub"
    if not (Path(model) / "config.json").is_file():
        raise DataError("not a model folder (no config.json); build it first, e.g. python -c \"from "
                        "agentworld.train.tiny import build_tiny; build_tiny('tiny-model')\", or give a "
                        "Hugging Face model id", path=model, field="model")
    return "local"


def _existing(path: Path, field: str) -> Path:
    if not path.exists():
        raise DataError("no such file or folder", path=str(path), field=field)
    return path


def dry_run(config: TrainCommon | RLConfig) -> DryRun:
    """Check ``config`` (paths already resolved, as ``load`` returns them) and count its samples.

    Raises:
        DataError: a missing file or folder, a model path that is not a model, data the readers refuse,
            or data that yields no sample; the message names the file and the field.
    """
    source = check_model(config.model)
    if isinstance(config, RLConfig):
        if config.data is None:
            raise DataError("an RL config needs 'data' (AgentWorldBench JSONL of one-turn samples)",
                            field="data")
        from agentworld.domains import domain_names
        from agentworld.models.base import backend_names
        from agentworld.schema import read_bench_jsonl

        if config.reward != "rule" and config.judge not in backend_names():
            raise DataError(f"unknown judge backend {config.judge!r}; known: {', '.join(backend_names())}",
                            field="judge")
        rows = list(read_bench_jsonl(_existing(config.data, "data"), known_domains=domain_names()))
        samples = len(rows[:config.max_samples] if config.max_samples is not None else rows)
        kind = "rl"
    else:
        from agentworld.train.common import load_samples

        for i, spec in enumerate(getattr(config, "data", [])):
            _existing(spec.path, f"data.{i}.path")
        for name in ("pipeline", "rejection", "system_prompts_from"):
            value = getattr(config, name, None)
            if value is not None:
                _existing(Path(value), name)
        for i, corpus in enumerate(getattr(config, "text_corpora", [])):
            _existing(corpus, f"text_corpora.{i}")
        samples = sum(1 for _ in load_samples(config))
        kind = str(getattr(config, "kind", "train"))
    if samples == 0 and not getattr(config, "text_corpora", None):
        raise DataError("the data yields no sample to train on", field="data")
    return DryRun(kind=kind, model=config.model, model_source=source, output_dir=config.output_dir,
                  samples=samples)

"""What the CPT and SFT recipes share: samples, run folders, device flags, LoRA and the result record.

A run folder holds ``config.json`` (the resolved config minus runtime fields), the trainer's
``checkpoint-N`` folders and the final model in ``final/``. Resuming reads the stored config first and refuses
a different one, because continuing a checkpoint on other data or hyper-parameters silently
produces a model nobody configured.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld.data.export import read_samples
from agentworld.data.masking import mask
from agentworld.data.pipeline import OutputSpec, PipelineConfig, iter_samples
from agentworld.data.process import stable_unit
from agentworld.data.types import TrainSample
from agentworld.domains.prompt_view import VIEW_FILE, PromptView
from agentworld.errors import ConfigMismatchError, DataError
from agentworld.io import atomic_write_text, dumps, loads
from agentworld.train.config import TrainCommon

_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


@dataclass(frozen=True)
class TrainResult:
    """What one training run did.

    Attributes:
        output_dir: the run folder (the final model is saved in its ``final`` folder).
        steps: global step reached (counted across resumes).
        initial_loss: first logged training loss of this invocation (None if none was logged).
        final_loss: last logged training loss (falls back to the trainer's mean loss).
        eval_loss_before: eval loss before training, when ``eval_fraction > 0``.
        eval_loss_after: eval loss after training, when ``eval_fraction > 0``.
        resumed_from: the checkpoint this invocation continued from, if any.
        train_rows: training rows built.
        eval_rows: held-out rows built.
    """

    output_dir: Path
    steps: int
    initial_loss: float | None
    final_loss: float | None
    eval_loss_before: float | None = None
    eval_loss_after: float | None = None
    resumed_from: Path | None = None
    train_rows: int = 0
    eval_rows: int = 0


def load_samples(config: Any) -> Iterator[TrainSample]:
    """Samples from a pipeline config file, or from ``data`` inputs through the default pipeline steps.

    A pipeline config's own ``split`` step is kept: its samples carry the side ``data process``
    gives them, and :func:`held_out` follows it, so a recipe evaluates on what the pipeline's eval
    file holds and never trains on it. The default steps for ``data`` inputs are the pipeline's
    (cleaning, expansion, dedup, mask) without a split: the recipe holds out its own eval rows by
    trajectory (``eval_fraction``). Samples come out in trajectory order.
    """
    if config.pipeline is not None:
        yield from iter_samples(PipelineConfig.load(config.pipeline))
    elif config.data:
        pipe = PipelineConfig(inputs=config.data, mask=config.mask, seed=config.seed,
                              output=OutputSpec(path=config.output_dir / "unused.jsonl"),
                              steps=["skip_retry_cycles", "drop_no_change", "expand", "dedup"])
        yield from mask(iter_samples(pipe), config.mask, config.seed)
    rejection = getattr(config, "rejection", None)
    if rejection is not None:
        yield from read_samples(Path(rejection))


def held_out(key: str, config: TrainCommon, split: str | None = None) -> bool:
    """Whether rows keyed ``key`` (a trajectory id) go to the eval side.

    A sample split by the data pipeline (``split``: ``train``/``eval``) stays on its side; an unsplit
    one is held out by a stable hash of ``key`` under ``seed`` (``eval_fraction``).
    """
    if split is not None:
        return split == "eval"
    return config.eval_fraction > 0 and stable_unit(config.seed, "train-eval", key) < config.eval_fraction


def last_checkpoint(output_dir: Path) -> Path | None:
    """The ``checkpoint-N`` folder with the highest N, if any."""
    if not output_dir.is_dir():
        return None
    found = [(int(m.group(1)), p) for p in output_dir.iterdir()
             if (m := _CHECKPOINT.match(p.name)) and p.is_dir()]
    return max(found)[1] if found else None


def prepare_run_dir(config: TrainCommon) -> Path | None:
    """Check or write ``config.json``; return the checkpoint to resume from (None: start fresh).

    Raises:
        ConfigMismatchError: resuming a folder whose stored config differs (runtime fields aside).
    """
    out = config.output_dir
    path = out / "config.json"
    current = config.stored()
    checkpoint = last_checkpoint(out) if config.resume else None
    if checkpoint is not None and path.exists():
        stored = loads(path.read_bytes())
        diff = [f"  {k}: {stored.get(k)!r} -> {current.get(k)!r}"
                for k in sorted(set(stored) | set(current)) if stored.get(k) != current.get(k)]
        if diff:
            raise ConfigMismatchError(f"{path} was written with a different configuration:\n"
                                      + "\n".join(diff)
                                      + "\nUse another output_dir, or restore the original settings.")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, dumps(current) + "\n")
    return checkpoint


def device_flags(config: TrainCommon) -> dict[str, Any]:
    """``use_cpu``/``bf16`` resolved: CPU when no CUDA, bf16 when the GPU supports it."""
    import torch

    cuda = torch.cuda.is_available()
    use_cpu = (not cuda) if config.use_cpu is None else config.use_cpu
    bf16 = (not use_cpu and cuda and torch.cuda.is_bf16_supported()) if config.bf16 is None else config.bf16
    return {"use_cpu": use_cpu, "bf16": bf16}


def trainer_args(config: TrainCommon) -> dict[str, Any]:
    """Keyword arguments every recipe passes to its ``TrainingArguments``/``SFTConfig``."""
    return {
        "output_dir": str(config.output_dir), "max_steps": config.max_steps,
        "learning_rate": config.learning_rate,
        "per_device_train_batch_size": config.per_device_train_batch_size,
        "per_device_eval_batch_size": config.per_device_train_batch_size,
        "gradient_accumulation_steps": config.gradient_accumulation_steps, "seed": config.seed,
        "save_steps": config.save_steps, "logging_steps": config.logging_steps, "report_to": [],
        "save_strategy": "steps", "disable_tqdm": True, **device_flags(config),
    }


def load_model(config: TrainCommon) -> tuple[Any, Any]:
    """Tokenizer and causal LM (LoRA-wrapped when configured); a missing pad token falls back to eos.

    ``model`` may be a hub id, a model folder, a GGUF file or a packaged alias (``smollm2``).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from agentworld.models.packaged import as_plain_weights, hf_source

    source, options = hf_source(config.model)  # a GGUF file or the smollm2 alias: dequantized to float32
    tokenizer = AutoTokenizer.from_pretrained(source, **options)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model: Any = as_plain_weights(AutoModelForCausalLM.from_pretrained(source, **options))
    if config.lora is not None:
        from peft import LoraConfig, get_peft_model

        lora = config.lora
        model = get_peft_model(model, LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                                                 target_modules=lora.target_modules, task_type="CAUSAL_LM"))
    return tokenizer, model


def write_view(folder: Path, view: PromptView) -> None:
    """Store the prompt view a model was trained on beside its weights (nothing for the official one), so the
    in-process backends ask it the same way (:mod:`agentworld.domains.prompt_view`)."""
    if not view.is_official and folder.is_dir():
        atomic_write_text(folder / VIEW_FILE, view.model_dump_json() + "\n")


def require_rows(rows: list[Any]) -> None:
    """Fail early, with a hint, when the data yields nothing to train on."""
    if not rows:
        raise DataError("no training rows: check the data inputs and the loss masks")


def final_dir(config: TrainCommon) -> Path:
    """Where the final model goes: ``output_dir/final`` (``output_dir/config.json`` is the run's config)."""
    return config.output_dir / "final"


def train(trainer: Any, config: TrainCommon, checkpoint: Path | None, *, train_rows: int,
          eval_rows: int) -> TrainResult:
    """Run ``trainer`` (from ``checkpoint`` when given), save the final model and summarise the losses."""
    before = trainer.evaluate()["eval_loss"] if eval_rows else None
    resumed_step = int(checkpoint.name.rsplit("-", 1)[1]) if checkpoint else 0
    output = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    losses = [float(e["loss"]) for e in trainer.state.log_history if "loss" in e and e["step"] > resumed_step]
    after = trainer.evaluate()["eval_loss"] if eval_rows else None
    trainer.save_model(str(final_dir(config)))
    tokenizer = getattr(trainer, "processing_class", None)
    if tokenizer is not None:
        tokenizer.save_pretrained(str(final_dir(config)))
    return TrainResult(
        output_dir=config.output_dir, steps=int(trainer.state.global_step),
        initial_loss=losses[0] if losses else None,
        final_loss=losses[-1] if losses else float(output.training_loss),
        eval_loss_before=float(before) if before is not None else None,
        eval_loss_after=float(after) if after is not None else None,
        resumed_from=checkpoint, train_rows=train_rows, eval_rows=eval_rows)

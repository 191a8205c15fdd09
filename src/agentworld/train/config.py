"""Typed configuration of the CPT and SFT recipes (``agentworld train cpt|sft``), YAML or JSON.

Every option is documented once, here, as a pydantic field description: the CLI help is generated
from these classes (:func:`agentworld.cli_support.config_command`) and the resolved config is
written to ``output_dir/config.json`` so a resumed run can refuse a changed configuration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentworld.cli_support import cli_flags, output
from agentworld.data.masking import MaskConfig
from agentworld.data.pipeline import InputSpec
from agentworld.domains.prompt_view import PromptView

C = TypeVar("C", bound="TrainCommon")

RUNTIME_FIELDS = ("max_steps", "resume", "save_steps", "logging_steps", "use_cpu", "bf16", "output_dir")
"""Fields a resumed run may change: they do not alter what the checkpoints were trained on."""


class LoraSpec(BaseModel):
    """LoRA adapter settings (peft); without them the full model is trained."""

    model_config = ConfigDict(extra="forbid")

    r: int = Field(8, ge=1, description="Adapter rank.")
    alpha: int = Field(16, ge=1, description="LoRA alpha (scaling = alpha / r).")
    dropout: float = Field(0.0, ge=0.0, lt=1.0, description="Dropout on the adapter input.")
    target_modules: list[str] | str = Field(
        "all-linear", description="Modules to adapt: names, or 'all-linear' (peft's shortcut).")


class TrainCommon(BaseModel):
    """Settings every recipe shares; relative paths in a config file are relative to that file."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="Hugging Face model id or local model folder.")
    output_dir: Path = Field(description="Where checkpoints, the final model and config.json go.",
                             json_schema_extra={**cli_flags("--out", old=("--output-dir",)),
                                                **output("folder")})
    max_steps: int = Field(100, ge=1, description="Optimizer steps to train for (in total, across resumes).")
    learning_rate: float = Field(1e-5, gt=0.0, description="Peak learning rate.")
    per_device_train_batch_size: int = Field(1, ge=1, description="Rows per device per micro-batch.")
    gradient_accumulation_steps: int = Field(1, ge=1, description="Micro-batches per optimizer step.")
    max_length: int = Field(4096, ge=16, description="Longest tokenized row; longer rows are cut.")
    seed: int = Field(0, description="Seed for the split, the mix and the trainer.")
    lora: LoraSpec | None = Field(None, description="LoRA settings (YAML/JSON only); none: all weights.")
    use_cpu: bool | None = Field(None, description="Train on the CPU; default: when no CUDA device exists.")
    bf16: bool | None = Field(None, description="bf16 mixed precision; default: when the GPU supports it.")
    resume: bool = Field(False, description="Continue from output_dir's last checkpoint (same config).",
                         json_schema_extra=cli_flags("--resume", old=("--no-resume",)))
    save_steps: int = Field(500, ge=1, description="Save a checkpoint every this many steps.")
    logging_steps: int = Field(10, ge=1, description="Log the training loss every this many steps.")
    eval_fraction: float = Field(0.0, ge=0.0, lt=1.0,
                                 description="Share of trajectories held out for eval loss (samples "
                                 "a pipeline config's split step placed keep their side instead).")

    @classmethod
    def load(cls: type[C], path: str | Path, **overrides: Any) -> C:
        """Read a YAML/JSON config (``overrides`` win); errors name the file and the field."""
        from agentworld.configfile import load_config_file

        path = Path(path)
        config = load_config_file(cls, path, **overrides)
        return config.relative_to(path.parent)

    def relative_to(self: C, base: Path) -> C:
        """A copy whose relative paths (output, data, corpora) are taken from ``base``."""
        update: dict[str, Any] = {"output_dir": base / self.output_dir}
        if self.model.startswith(("./", "../")):  # Path("./m").parts drops the "."
            update["model"] = str(base / self.model)
        for name in ("data",):
            if hasattr(self, name):
                update[name] = [i.model_copy(update={"path": base / i.path}) for i in getattr(self, name)]
        for name in ("pipeline", "rejection", "system_prompts_from"):
            value = getattr(self, name, None)
            if value is not None:
                update[name] = base / value
        if hasattr(self, "text_corpora"):
            update["text_corpora"] = [base / p for p in self.text_corpora]
        return self.model_copy(update=update)

    def stored(self) -> dict[str, Any]:
        """The fields that define the training run (runtime fields left out), as stored in config.json."""
        dumped = self.model_dump(mode="json")
        return {k: v for k, v in dumped.items() if k not in RUNTIME_FIELDS}


class DataFields(BaseModel):
    """Where training samples come from: data-pipeline inputs, or a whole pipeline config."""

    data: list[InputSpec] = Field(default_factory=list,
                                  description="Trajectory inputs, as in the data pipeline (on the command "
                                  "line: files; a config file may give each a format and options).",
                                  json_schema_extra={"cli_type": "paths"})
    pipeline: Path | None = Field(None, description="A data-pipeline config whose inputs and steps to use.")
    mask: MaskConfig = Field(default_factory=MaskConfig,
                             description="Loss-mask settings when 'data' is given (YAML/JSON only).")


class CPTConfig(TrainCommon, DataFields):
    """Continued pre-training: whole trajectories as text, loss on kept observations, plus text corpora."""

    kind: Literal["cpt"] = Field("cpt", description="Recipe name (fixed).")
    text_corpora: list[Path] = Field(default_factory=list,
                                     description="Plain text files mixed in with loss on every token.")
    mix_ratio: float | None = Field(None, ge=0.0, lt=1.0,
                                    description="Target share of text-corpus rows in the mix; default: all.")


class SFTConfig(TrainCommon, DataFields):
    """Supervised fine-tuning: reasoning trace + tagged prediction, over system-prompt variants."""

    kind: Literal["sft"] = Field("sft", description="Recipe name (fixed).")
    variants: int = Field(10, ge=1, le=24, description="System-prompt variants built per domain.")
    variants_per_sample: int | None = Field(
        None, ge=1, description="Rows per sample (rotating variants); default: one row per variant.")
    reasoning: Literal["auto", "none"] = Field(
        "auto", description="'auto' derives a short trace when a sample has none; 'none' omits it.")
    rejection: Path | None = Field(None, description="TrainSample JSONL of rejection-sampled rows.")
    system_prompt: str | None = Field(
        None, min_length=1, description="One system prompt for every row instead of the domain's prompt "
        "variants (a deployment's own prompt, or a short one for a small model).")
    prompt: Literal["variants", "brief"] = Field(
        "variants", description="System prompts of the rows: 'variants' (the domain's prompt and its "
        "variants) or 'brief' (the domain's short prompt, for small models; evaluate with eval run --prompt "
        "brief).")
    history_turns: int | None = Field(None, ge=0, description="Earlier turns shown in each row (the last N; "
                                      "eval run --history-turns N shows the same); default: all.")
    history_chars: int | None = Field(None, ge=16, description="Each earlier observation shown cut to N "
                                      "characters (eval run --history-chars N); default: whole.")
    system_prompts_from: Path | None = Field(
        None, description="An 'agentworld optimize prompts' output folder: each domain it has variants for "
        "trains on those (v0 = the shipped prompt, then the optimizer's revisions, in version order, at most "
        "'variants') instead of the built-in variants; other domains keep the built-in ones.")

    @model_validator(mode="after")
    def _one_prompt_source(self) -> SFTConfig:
        if self.system_prompt is not None and self.system_prompts_from is not None:
            raise ValueError("give system_prompt or system_prompts_from, not both")
        if self.prompt == "brief" and (self.system_prompt, self.system_prompts_from) != (None, None):
            raise ValueError("prompt: brief takes the domain's short prompt; leave system_prompt(s_from) "
                             "unset")
        return self

    def view(self) -> PromptView:
        """How the rows show a turn (the system prompt aside when ``prompt`` is ``variants``)."""
        return PromptView(system="brief" if self.prompt == "brief" else "official",
                          history_turns=self.history_turns, history_chars=self.history_chars)

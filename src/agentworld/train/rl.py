"""GSPO reinforcement learning of a world model: one turn per sample, hybrid rubric + rule reward.

GSPO is TRL's ``GRPOTrainer`` with sequence-level importance sampling; :func:`gspo_args` pins the
settings (``importance_sampling_level="sequence"``, ``loss_type="grpo"``, ``beta=0``, clipping
``epsilon=3e-4``/``epsilon_high=4e-4``, ``steps_per_generation=4``, no gradient accumulation).
Each RL sample is a single turn (its prompt is the official world-model message list of that turn)
because samples sharing prefixes collapsed the reward in the report. Rewards come from
:mod:`agentworld.train.rewards`; the judge is a registered backend (``openai`` for any
OpenAI-compatible endpoint, ``scripted`` in tests) or a backend object passed in.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentworld.cli_support import cli_flags, output
from agentworld.domains.prompt_view import OFFICIAL, PromptView
from agentworld.models.base import ChatBackend, create_backend
from agentworld.models.packaged import as_plain_weights, hf_source
from agentworld.schema import BenchSample
from agentworld.train.rewards import (
    RUBRIC_WEIGHT,
    RULE_WEIGHT,
    HybridReward,
    RubricReward,
    RuleReward,
    RuleTierReward,
)

RewardMode = Literal["hybrid", "separate", "rubric", "rule", "offline_hybrid"]


class RLConfig(BaseModel):
    """Settings of one GSPO run; in a config file (:meth:`load`), relative paths are relative to it.

    The data may instead be passed as ``samples`` to :func:`run_rl`; ``offline_hybrid`` scores 0.9 with
    the rule tier's overall score (:class:`RuleTierReward`) standing in for the rubric, 0.1 with rule01.
    """

    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="Hugging Face model id or local model folder (the SFT model).")
    output_dir: Path = Field(description="Where checkpoints, logs and the final model go.",
                             json_schema_extra={**cli_flags("--out", old=("--output-dir",)),
                                                **output("folder")})
    data: Path | None = Field(None, description="AgentWorldBench-style JSONL of one-turn samples.")
    max_samples: int | None = Field(None, ge=1, description="Use at most this many samples; default: all.")
    reward: RewardMode = Field("hybrid", description="hybrid (0.9 rubric + 0.1 rule in one function), "
                               "separate (TRL's reward_weights), rubric, rule, or offline_hybrid (the rule "
                               "tier stands in for the rubric: no judge).")
    judge: str = Field("openai", description="Registered backend name of the rubric judge.")
    judge_options: dict[str, Any] = Field(default_factory=dict, description="Options of the judge's backend "
                                          "factory (YAML/JSON only).")
    judge_model: str = Field("", description="Model name the judge backend asks for.")
    judge_concurrency: int = Field(16, ge=1, description="Judge requests in flight.")
    judge_temperature: float | None = Field(0.0, description="Judge sampling temperature.")
    judge_max_tokens: int | None = Field(4096, ge=1, description="Most tokens of a judge answer.")
    rubric_weight: float = Field(RUBRIC_WEIGHT, description="Weight of the rubric reward.")
    rule_weight: float = Field(RULE_WEIGHT, description="Weight of the rule reward.")
    reward_scale: float = Field(1.0, description="Multiplies the hybrid reward (25 gives the report's "
                                "[0, 25] range).")
    learning_rate: float = Field(1e-6, gt=0.0, description="Peak learning rate.")
    max_steps: int = Field(100, ge=1, description="Optimizer steps to train for.")
    num_generations: int = Field(8, ge=1, description="Completions sampled per prompt (the GSPO group).")
    per_device_train_batch_size: int = Field(8, ge=1, description="Completions per device per micro-batch.")
    steps_per_generation: int = Field(4, ge=1, description="Optimizer steps per generation round.")
    max_completion_length: int = Field(2048, ge=1, description="Most tokens of a completion.")
    temperature: float = Field(1.0, ge=0.0, description="Sampling temperature of the completions.")
    epsilon: float = Field(3e-4, description="Lower clipping range of the sequence-level ratio.")
    epsilon_high: float = Field(4e-4, description="Upper clipping range of the sequence-level ratio.")
    logging_steps: int = Field(1, ge=1, description="Log every this many steps.")
    save_final: bool = Field(True, description="Save the final model in output_dir/final.")
    seed: int = Field(0, description="Seed of the trainer and the sampling.")
    use_cpu: bool | None = Field(None, description="Train on the CPU; default: when no CUDA device exists.")
    prompt: Literal["official", "brief"] = Field("official", description="The system prompt of the rows "
                                                 "(brief: the domain's short one, as train sft's prompt: "
                                                 "brief).")
    history_turns: int | None = Field(None, ge=0, description="Earlier turns shown (the last N), as the SFT "
                                      "model was trained; default: all.")
    history_chars: int | None = Field(None, ge=16, description="Each earlier observation shown cut to N "
                                      "characters; default: whole.")

    def view(self) -> PromptView:
        """The :class:`PromptView` of the rows."""
        return PromptView(system=self.prompt, history_turns=self.history_turns,
                          history_chars=self.history_chars)

    @classmethod
    def load(cls, path: str | Path, **overrides: Any) -> RLConfig:
        """Read a YAML/JSON config (``overrides`` win); relative paths are relative to the file, as in
        every other config (``model`` only when it starts with ``./`` or ``../``: else it is a hub id)."""
        from agentworld.configfile import load_config_file

        path = Path(path)
        return load_config_file(cls, path, **overrides).relative_to(path.parent)

    def relative_to(self, base: Path) -> RLConfig:
        """A copy whose relative paths (output, data, a ``./`` model) are taken from ``base``."""
        update: dict[str, Any] = {"output_dir": base / self.output_dir}
        if self.data is not None:
            update["data"] = base / self.data
        if self.model.startswith(("./", "../")):
            update["model"] = str(base / self.model)
        return self.model_copy(update=update)


class RLResult(BaseModel):
    """What a run produced: where the model went and the mean reward logged at each step."""

    output_dir: Path
    final_model: Path | None
    steps: int
    rewards: list[float]
    log_history: list[dict[str, Any]] = Field(default_factory=list)


def rl_rows(samples: Iterable[BenchSample], view: PromptView = OFFICIAL) -> list[dict[str, Any]]:
    """One RL row per turn: the prompt messages under ``view`` (default: the official ones) plus the columns
    the rewards read (the whole history: the rule tier scores against it).

    ``history`` is JSON-encoded so first-turn-only datasets keep a stable Arrow type.
    """
    rows = []
    for s in samples:
        rows.append({
            "prompt": [{"role": m.role, "content": m.content} for m in view.sample_messages(s)],
            "ground_truth": s.ground_truth, "domain": s.domain, "action": s.action,
            "history": json.dumps([list(pair) for pair in s.history()]), "id": s.id})
    return rows


def gspo_args(config: RLConfig, reward_weights: list[float] | None = None) -> Any:
    """The ``GRPOConfig`` implementing GSPO for ``config`` (CPU settings when no GPU is used)."""
    import torch
    from trl import GRPOConfig

    cpu = config.use_cpu if config.use_cpu is not None else not torch.cuda.is_available()
    return GRPOConfig(
        output_dir=str(config.output_dir),
        importance_sampling_level="sequence", loss_type="grpo", beta=0.0,
        epsilon=config.epsilon, epsilon_high=config.epsilon_high,
        steps_per_generation=config.steps_per_generation, gradient_accumulation_steps=1,
        num_generations=config.num_generations,
        per_device_train_batch_size=config.per_device_train_batch_size,
        max_completion_length=config.max_completion_length, temperature=config.temperature,
        learning_rate=config.learning_rate, max_steps=config.max_steps, logging_steps=config.logging_steps,
        seed=config.seed, report_to=[], save_strategy="no", disable_tqdm=True,
        use_cpu=cpu, bf16=False if cpu else torch.cuda.is_bf16_supported(),
        # TRL defaults gradient checkpointing on; it only slows CPU runs (the rename warning is harmless)
        gradient_checkpointing=not cpu, reward_weights=reward_weights,
    )


def reward_functions(config: RLConfig, judge: ChatBackend | None = None
                     ) -> tuple[list[Callable[..., Any]], list[float] | None]:
    """The reward functions (and TRL ``reward_weights``) for ``config.reward``."""
    if config.reward == "rule":
        return [RuleReward()], None
    if config.reward == "offline_hybrid":  # no judge: the dense rule tier stands in for the rubric
        return [RuleTierReward(), RuleReward()], [config.rubric_weight, config.rule_weight]
    backend = judge if judge is not None else create_backend(config.judge, **config.judge_options)
    rubric = RubricReward(backend, batch=config.judge_concurrency, model=config.judge_model,
                          temperature=config.judge_temperature, max_tokens=config.judge_max_tokens)
    if config.reward == "rubric":
        return [rubric], None
    if config.reward == "separate":
        return [rubric, RuleReward()], [config.rubric_weight, config.rule_weight]
    return [HybridReward(rubric, rubric_weight=config.rubric_weight, rule_weight=config.rule_weight,
                         scale=config.reward_scale)], None


def _load_samples(config: RLConfig, samples: Sequence[BenchSample] | None) -> list[BenchSample]:
    if samples is None:
        if config.data is None:
            raise ValueError("RLConfig.data is not set and no samples were given")
        from agentworld.domains import domain_names
        from agentworld.schema import read_bench_jsonl

        samples = list(read_bench_jsonl(config.data, known_domains=domain_names()))
    out = list(samples)
    return out[:config.max_samples] if config.max_samples is not None else out


def run_rl(config: RLConfig, *, samples: Sequence[BenchSample] | None = None,
           judge: ChatBackend | None = None) -> RLResult:
    """Train ``config.model`` with GSPO on one-turn samples; returns the run record."""
    from datasets import Dataset
    from trl import GRPOTrainer

    rows = rl_rows(_load_samples(config, samples), config.view())
    if not rows:
        raise ValueError("no RL samples")
    funcs, weights = reward_functions(config, judge)
    args = gspo_args(config, weights)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # loaded here, not by TRL from the name: from this machine only (hf_source), a GGUF file dequantized
    source, options = hf_source(config.model)
    model: Any = as_plain_weights(AutoModelForCausalLM.from_pretrained(source, **options))
    processing_class = AutoTokenizer.from_pretrained(source, **options)
    trainer = GRPOTrainer(model=model, reward_funcs=list[Any](funcs), args=args,
                          train_dataset=Dataset.from_list(rows), processing_class=processing_class)
    trainer.train()
    history = list(trainer.state.log_history)
    final = None
    if config.save_final:
        final = config.output_dir / "final"
        trainer.save_model(str(final))
        from agentworld.train.common import write_view

        write_view(final, config.view())
    rewards = [float(h["reward"]) for h in history if "reward" in h]
    return RLResult(output_dir=config.output_dir, final_model=final, steps=trainer.state.global_step,
                    rewards=rewards, log_history=history)

"""The recipe of a real small world model on a CPU: SmolLM2-135M-Instruct (the ``smollm2`` alias), trained by
``train sft`` on the shipped corpora, exported to GGUF and evaluated through llama.cpp.

One place for the settings ``agentworld demo train`` and ``benchmarks/bench_real_lm.py`` share, so the
demo's numbers and the benchmark's table come from the same recipe:

- the prompt (:data:`VIEW`): the domain's brief system prompt, the last earlier turn only, that turn's
  observation cut at 600 characters — the same in training (``train sft``: ``prompt: brief``,
  ``history_turns``, ``history_chars``) and in evaluation (``eval run --prompt brief --history-turns 1
  --history-chars 600``). The official prompts run to 6,000 tokens; on two cores SmolLM2 trains at
  about 100-150 tokens a second, so they would leave a 12-minute budget a few dozen rows;
- the target: the observation in its tag, no think block (``reasoning: none``);
- evaluation: greedy, through the in-process llama.cpp backend on the exported GGUF (q8_0), because
  llama.cpp generates several times faster than transformers in float32 on a CPU; the export is
  checked against transformers by ``tests/train/test_real_lm.py`` and by the benchmark's served row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld.domains.prompt_view import PromptView
from agentworld.io import atomic_write_jsonl

VIEW = PromptView(system="brief", history_turns=1, history_chars=600)
"""What the small model is shown of a turn, in training and in evaluation."""


@dataclass(frozen=True)
class SmallLMRecipe:
    """Training and evaluation settings of the small-model recipe (defaults: the benchmark's)."""

    model: str = "smollm2"
    steps: int = 150
    learning_rate: float = 1e-4
    batch_size: int = 1
    gradient_accumulation: int = 4
    max_length: int = 1536
    seed: int = 0
    view: PromptView = VIEW
    quant: str = "q8_0"
    max_tokens: int = 512
    """Token limit of a prediction (held-out observations above it are cut, for every model alike)."""
    keep_ratios: dict[str, float] | None = None
    """The loss mask's keep ratios (None: the data pipeline's 7-category defaults)."""
    domains: tuple[str, ...] = field(default_factory=tuple)
    """Domains whose shipped corpora train the model (empty: every shipped corpus)."""


def corpus_inputs(domains: Sequence[str]) -> list[dict[str, Any]]:
    """Data-pipeline inputs: the shipped corpus of each of ``domains`` (all of them when empty)."""
    from agentworld.corpus import shipped_corpora

    corpora = shipped_corpora()
    return [{"path": path} for name, path in corpora.items() if not domains or name in domains]


def sft_config(recipe: SmallLMRecipe, output_dir: Path) -> Any:
    """The ``train sft`` config of ``recipe`` (the model's own chat template, one brief prompt per domain)."""
    from agentworld.data.masking import MaskConfig
    from agentworld.train.config import SFTConfig

    mask = MaskConfig(keep_ratios=recipe.keep_ratios) if recipe.keep_ratios is not None else MaskConfig()
    return SFTConfig(model=recipe.model, output_dir=output_dir, data=corpus_inputs(recipe.domains), mask=mask,
                     prompt="brief", history_turns=recipe.view.history_turns,
                     history_chars=recipe.view.history_chars, reasoning="none", variants=1,
                     max_steps=recipe.steps, learning_rate=recipe.learning_rate,
                     per_device_train_batch_size=recipe.batch_size,
                     gradient_accumulation_steps=recipe.gradient_accumulation, max_length=recipe.max_length,
                     seed=recipe.seed, save_steps=max(recipe.steps // 2, 1), logging_steps=5, resume=True)


def train(recipe: SmallLMRecipe, output_dir: Path) -> tuple[Path, Path, Any]:
    """SFT, then the GGUF export; returns (final model folder, GGUF file, :class:`TrainResult` or None).

    Resumes: a finished run (its ``final`` folder and GGUF exist) is not trained again.
    """
    from agentworld.train.export import export
    from agentworld.train.sft import run_sft

    final = output_dir / "final"
    gguf = output_dir / "export" / f"model-{recipe.quant}.gguf"
    result = None
    if not (final / "config.json").is_file():
        result = run_sft(sft_config(recipe, output_dir))
    if not gguf.is_file():
        export(final, recipe.model, output_dir / "export", recipe.quant)
    return final, gguf, result


def eval_config(data: Sequence[Path], out: Path, model: str, recipe: SmallLMRecipe, *,
                base_url: str | None = None, concurrency: int = 4) -> Any:
    """``eval run`` settings for one model on the held-out rows: the recipe's view, greedy, rules only."""
    from agentworld.eval.config import EvalConfig

    view = recipe.view
    return EvalConfig(data=list(data), out=out, model=model, model_base_url=base_url, no_judge=True,
                      temperature=0.0, max_tokens=recipe.max_tokens, seed=recipe.seed,
                      concurrency=concurrency,
                      prompt=view.system, history_turns=view.history_turns, history_chars=view.history_chars,
                      progress=False)


def spread(rows: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """``n`` rows taken evenly across ``rows`` (every trajectory's turns, not only the first ones)."""
    if len(rows) <= n:
        return rows
    step = len(rows) / n
    return [rows[math.floor(i * step)] for i in range(n)]


def heldout_subset(files: Sequence[Path], out_dir: Path, per_domain: int) -> list[Path]:
    """``out_dir/<domain>_test.jsonl``: at most ``per_domain`` rows of each held-out file, spread evenly."""
    from agentworld.inputs import jsonl_rows

    written = []
    for path in files:
        rows = [row for _, row in jsonl_rows(path.read_text(encoding="utf-8"), path=path)]
        target = out_dir / path.name
        atomic_write_jsonl(target, spread(rows, per_domain))
        written.append(target)
    return written

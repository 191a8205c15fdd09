"""Supervised fine-tuning: an explicit reasoning trace, then the prediction in the domain's response tag.

Each kept sample (its :class:`~agentworld.data.types.LossMask` says keep, or it has none) becomes
conversational prompt/completion rows for TRL's ``SFTTrainer``, which trains only the completion:

- prompt: a system-prompt *variant* of the domain, the history as user/assistant pairs, the action;
- completion: ``<think>\\n{trace}\\n</think>\\n<{tag}>\\n{observation}\\n</{tag}>``.

The trace is ``sample.meta["reasoning"]`` when present (rejection sampling stores the judged
candidate's reasoning there). Otherwise, with ``reasoning="auto"``, :func:`auto_trace` derives a
short deterministic one from the action and the facts the history establishes (earlier turns
that mention the same files or names) — a scaffold that teaches the think-then-predict format
without inventing knowledge; with ``reasoning="none"`` the think block is left out.

System-prompt diversification (the report trains on 10 variants per sample so the model does not
overfit one wording): :func:`system_variants` makes deterministic edits of the registry prompt —
an optional paraphrased intro line, the middle sections in original or reversed order, with or
without the few-shot ``# Example`` section, ``#`` or ``##`` headings. Variant 0 is the prompt
itself; each row records its variant id. By default every sample appears once per variant.
``system_prompts_from`` takes the variants an ``agentworld optimize prompts`` run stored instead
(its v0 is the shipped prompt, so variant 0 stays the prompt itself).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from agentworld.data.export_formats import trained
from agentworld.data.types import TrainSample
from agentworld.domains.registry import DOMAINS, GENERIC_EFFECT
from agentworld.optimize.store import load_variants
from agentworld.train.common import (
    TrainResult,
    final_dir,
    held_out,
    load_model,
    load_samples,
    prepare_run_dir,
    require_rows,
    train,
    trainer_args,
    write_view,
)
from agentworld.train.config import SFTConfig

INTROS = (
    "",
    "You are a world model: given the interaction so far and the agent's next action, predict the "
    "environment's next observation.",
    "Act as the environment itself. Read the history and the action, then produce exactly what the "
    "environment returns.",
    "Your job is to simulate the environment faithfully, one observation per action.",
)
"""Paraphrased intro lines put before the prompt (the first, empty, keeps the original opening)."""

MAX_VARIANTS = len(INTROS) * 2 * 2 * 2
_SECTION = re.compile(r"^# ", re.MULTILINE)
_PATH = re.compile(r"(?<![\w$])(?:[\w.-]+/)*[\w-]+\.[A-Za-z0-9]{1,8}\b|(?<![\w$])/[\w./-]+")


def _sections(prompt: str) -> tuple[str, list[str]]:
    """Text before the first ``# `` heading, and the sections from each heading on."""
    starts = [m.start() for m in _SECTION.finditer(prompt)]
    if not starts:
        return prompt, []
    head = prompt[:starts[0]]
    return head, [prompt[a:b].rstrip("\n") for a, b in zip(starts, [*starts[1:], len(prompt)], strict=True)]


def variant_recipe(index: int) -> tuple[int, bool, bool, bool]:
    """``(intro, reversed_middle, drop_example, deeper_headings)`` of variant ``index`` (mixed radix)."""
    intro, rest = index % len(INTROS), index // len(INTROS)
    return intro, bool(rest & 1), bool(rest & 2), bool(rest & 4)


def system_variant(prompt: str, index: int) -> str:
    """Variant ``index`` of ``prompt`` (0 is the prompt unchanged); see the module docstring."""
    if index == 0:
        return prompt
    intro, reverse, drop_example, deeper = variant_recipe(index)
    head, sections = _sections(prompt)
    if drop_example:
        sections = [s for s in sections if not s.startswith("# Example")]
    if reverse and len(sections) > 3:  # keep the role first and the output contract/example last
        tail = [s for s in sections[1:] if s.startswith(("# Output", "# Example"))]
        middle = [s for s in sections[1:] if s not in tail]
        sections = [sections[0], *reversed(middle), *tail]
    if deeper:
        sections = ["#" + s for s in sections]
    body = head + "\n\n".join(sections) if sections else head
    return (INTROS[intro] + "\n\n" + body) if INTROS[intro] else body


def system_variants(prompt: str, n: int) -> list[str]:
    """The first ``n`` variants of ``prompt``."""
    if n > MAX_VARIANTS:
        raise ValueError(f"at most {MAX_VARIANTS} system-prompt variants are defined")
    return [system_variant(prompt, i) for i in range(n)]


def _command(action: str) -> str:
    """The command the action runs: the keystrokes of a terminal action, else its first content line."""
    body = action.split("**Action:**", 1)[-1]
    match = re.search(r"```(?:json)?\s*(.*?)```", body, re.DOTALL)
    text = match.group(1) if match else body
    try:
        batches = json.loads(text)
        keys = [b["keystrokes"] for b in batches if isinstance(b, dict) and "keystrokes" in b]
        if keys:
            return " ; ".join(k.strip() for k in keys if k.strip()) or "(wait)"
    except (ValueError, TypeError):
        pass
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0][:160] if lines else "(empty)"


def auto_trace(sample: TrainSample) -> str:
    """A short deterministic trace: what the action does, what the history says about it, what follows.

    Example: "The command `cat notes.md` refers to notes.md, which appeared at turn 2. The shell
    echoes the command, prints its output and a new prompt."
    """
    command = _command(sample.action)
    domain = DOMAINS.get(sample.domain)
    parts = [f"The {domain.action_word if domain else 'action'} `{command}`"]
    facts = []
    for name in dict.fromkeys(_PATH.findall(command)):
        seen = [i for i, (a, o) in enumerate(sample.history, start=1) if name in a or name in o]
        if seen:
            facts.append(f"{name}, which appeared at turn {seen[-1]}")
        else:
            facts.append(f"{name}, not seen before")
    parts.append(f" refers to {'; '.join(facts)}." if facts else " acts on the current state.")
    category = sample.mask.category if sample.mask else None
    if category == "error":
        parts.append(" It fails, and the environment reports the error exactly as the real tool would.")
    else:
        parts.append(f" {domain.effect if domain else GENERIC_EFFECT}")
    return "".join(parts)


def completion_text(sample: TrainSample, reasoning: str) -> str:
    """The target: optional think block, then the observation inside the domain's response tag."""
    tag = DOMAINS[sample.domain].response_tag
    trace = sample.meta.get("reasoning")
    if not trace and reasoning == "auto":
        trace = auto_trace(sample)
    think = f"<think>\n{str(trace).strip()}\n</think>\n" if trace else ""
    return f"{think}<{tag}>\n{sample.observation}\n</{tag}>"


def sft_rows(samples: Iterable[TrainSample], config: SFTConfig) -> list[dict[str, Any]]:
    """Prompt/completion rows (plus ``variant``, ``sample_id``, ``trajectory_id``, ``split``) of the kept
    samples."""
    cache: dict[str, list[str]] = {}
    optimized = load_variants(config.system_prompts_from) if config.system_prompts_from else {}
    view = config.view()
    rows = []
    for k, sample in enumerate(s for s in samples if trained(s)):
        if sample.domain not in cache:
            cache[sample.domain] = ([config.system_prompt] if config.system_prompt else
                                    [DOMAINS[sample.domain].brief_prompt] if config.prompt == "brief" else
                                    optimized.get(sample.domain, [])[:config.variants] or
                                    system_variants(DOMAINS[sample.domain].system_prompt, config.variants))
        variants = cache[sample.domain]
        per = config.variants_per_sample or len(variants)
        history = [m for a, o in view.history(sample.history) for m in ({"role": "user", "content": a},
                                                                         {"role": "assistant", "content": o})]
        completion = [{"role": "assistant", "content": completion_text(sample, config.reasoning)}]
        for j in range(per):
            variant = (k * per + j) % len(variants)
            rows.append({"prompt": [{"role": "system", "content": variants[variant]}, *history,
                                    {"role": "user", "content": sample.action}],
                         "completion": completion, "variant": variant, "sample_id": sample.id,
                         "trajectory_id": sample.trajectory_id, "split": sample.split})
    return rows


def build_rows(config: SFTConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Train and eval rows: the pipeline's split where it made one, else by trajectory (``eval_fraction``)."""
    rows = sft_rows(load_samples(config), config)
    eval_rows = [r for r in rows if held_out(r["trajectory_id"], config, r["split"])]
    return [r for r in rows if not held_out(r["trajectory_id"], config, r["split"])], eval_rows


def run_sft(config: SFTConfig) -> TrainResult:
    """Train an SFT run end to end with TRL's ``SFTTrainer`` (completion-only loss)."""
    from datasets import Dataset
    from trl import SFTConfig as TRLConfig
    from trl import SFTTrainer

    checkpoint = prepare_run_dir(config)
    tokenizer, model = load_model(config)
    train_rows, eval_rows = build_rows(config)
    require_rows(train_rows)

    def dataset(rows: list[dict[str, Any]]) -> Any:
        return Dataset.from_list([{"prompt": r["prompt"], "completion": r["completion"]} for r in rows]) \
            if rows else None

    args = TRLConfig(**trainer_args(config), max_length=config.max_length, gradient_checkpointing=False,
                     completion_only_loss=True, packing=False)
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset(train_rows),
                         eval_dataset=dataset(eval_rows), processing_class=tokenizer)
    result = train(trainer, config, checkpoint, train_rows=len(train_rows), eval_rows=len(eval_rows))
    write_view(final_dir(config), config.view())
    return result

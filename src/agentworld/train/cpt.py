"""Continued pre-training: next-token loss on whole trajectories, only where the next state is informative.

A trajectory is rendered as plain text — the system prompt, then each turn's action and
observation, separated by blank lines — and tokenized *segment by segment*, so every token belongs
to exactly one segment. Labels copy ``input_ids`` on the observation segments of turns the data
pipeline's masking keeps (:func:`agentworld.data.masking.mask` over the expanded samples, mapped
back by turn number) and are -100 everywhere else: system prompt, actions, separators and masked
observations ("learn the next state, not the next token"). Rows longer than ``max_length`` are cut
into windows; windows without a trained token are dropped. Plain text corpora are mixed in with
loss on every token. Training uses the transformers ``Trainer`` on ``input_ids``/``labels`` rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from agentworld.data.export_formats import IGNORE_INDEX, trained
from agentworld.data.process import stable_unit
from agentworld.data.types import TrainSample
from agentworld.train.common import (
    TrainResult,
    held_out,
    load_model,
    load_samples,
    prepare_run_dir,
    require_rows,
    train,
    trainer_args,
)
from agentworld.train.config import CPTConfig

SEPARATOR = "\n\n"
"""Between segments; it belongs to no observation, so it is never trained."""


def trajectories(samples: Iterable[TrainSample]) -> Iterator[list[TrainSample]]:
    """Group consecutive samples by trajectory id (the pipeline yields them in trajectory order)."""
    group: list[TrainSample] = []
    for sample in samples:
        if group and sample.trajectory_id != group[0].trajectory_id:
            yield group
            group = []
        group.append(sample)
    if group:
        yield group


def segments(turns: list[TrainSample]) -> list[tuple[str, int, str]]:
    """``(kind, turn, text)`` pieces of a trajectory; kind: ``system``, ``sep``, ``action``, ``observation``.

    The texts come from the samples themselves (the last sample's history plus its own pair would
    do, but each sample's own action/observation keeps the mask mapping explicit).
    """
    turns = sorted(turns, key=lambda s: s.turn)
    out: list[tuple[str, int, str]] = []
    if turns and turns[0].system:
        out += [("system", 0, turns[0].system), ("sep", 0, SEPARATOR)]
    for sample in turns:
        out += [("action", sample.turn, sample.action), ("sep", sample.turn, SEPARATOR),
                ("observation", sample.turn, sample.observation), ("sep", sample.turn, SEPARATOR)]
    return out


def cpt_row(turns: list[TrainSample], tokenizer: Any) -> dict[str, list[int]]:
    """``input_ids``/``labels`` of one trajectory: labels only on the observations of kept turns."""
    keep = {s.turn: trained(s) for s in turns}
    ids: list[int] = []
    labels: list[int] = []
    for kind, turn, text in segments(turns):
        piece = tokenizer(text, add_special_tokens=False)["input_ids"]
        ids += piece
        labels += piece if kind == "observation" and keep[turn] else [IGNORE_INDEX] * len(piece)
    return {"input_ids": ids, "labels": labels}


def windows(row: dict[str, list[int]], max_length: int) -> Iterator[dict[str, list[int]]]:
    """Cut a row into ``max_length`` windows; windows with nothing to learn are skipped."""
    ids, labels = row["input_ids"], row["labels"]
    for start in range(0, len(ids), max_length):
        part = labels[start:start + max_length]
        if sum(label != IGNORE_INDEX for label in part) > 1:  # one token gives no next-token target
            yield {"input_ids": ids[start:start + max_length], "labels": part}


def text_rows(paths: Iterable[Path], tokenizer: Any, max_length: int) -> Iterator[dict[str, list[int]]]:
    """Plain text files as full-loss rows, ``max_length`` tokens each (eos appended per file)."""
    for path in paths:
        ids = tokenizer(Path(path).read_text(encoding="utf-8"), add_special_tokens=False)["input_ids"]
        if tokenizer.eos_token_id is not None:
            ids.append(tokenizer.eos_token_id)
        yield from windows({"input_ids": ids, "labels": list(ids)}, max_length)


def mix(trajectory_rows: list[dict[str, Any]], corpus_rows: list[dict[str, Any]], ratio: float | None,
        seed: int) -> list[dict[str, Any]]:
    """Trajectory rows plus corpus rows, the latter capped at share ``ratio`` of the mix (a seeded pick)."""
    if ratio is not None and corpus_rows:
        want = round(ratio / (1.0 - ratio) * len(trajectory_rows))
        order = sorted(range(len(corpus_rows)), key=lambda i: stable_unit(seed, "mix", i))
        corpus_rows = [corpus_rows[i] for i in sorted(order[:want])]
    return trajectory_rows + corpus_rows


def build_rows(config: CPTConfig, tokenizer: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Train and eval rows: trajectories on the pipeline's side where it split them, else split by id
    (``eval_fraction``); text corpora on the train side."""
    train_rows: list[dict[str, Any]] = []
    eval_rows: list[dict[str, Any]] = []
    for turns in trajectories(load_samples(config)):
        side = eval_rows if held_out(turns[0].trajectory_id, config, turns[0].split) else train_rows
        side.extend(windows(cpt_row(turns, tokenizer), config.max_length))
    corpus = list(text_rows(config.text_corpora, tokenizer, config.max_length))
    return mix(train_rows, corpus, config.mix_ratio, config.seed), eval_rows


def run_cpt(config: CPTConfig) -> TrainResult:
    """Train a CPT run end to end (resuming from the last checkpoint when ``config.resume``)."""
    from datasets import Dataset
    from transformers import DataCollatorForSeq2Seq, Trainer, TrainingArguments

    checkpoint = prepare_run_dir(config)
    tokenizer, model = load_model(config)
    train_rows, eval_rows = build_rows(config, tokenizer)
    require_rows(train_rows)
    args = TrainingArguments(**trainer_args(config), remove_unused_columns=False)
    trainer = Trainer(
        model=model, args=args, train_dataset=Dataset.from_list(train_rows) if train_rows else None,
        eval_dataset=Dataset.from_list(eval_rows) if eval_rows else None,
        data_collator=DataCollatorForSeq2Seq(tokenizer, label_pad_token_id=IGNORE_INDEX, padding=True))
    return train(trainer, config, checkpoint, train_rows=len(train_rows), eval_rows=len(eval_rows))

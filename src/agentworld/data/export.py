"""Exports of turn-level training samples for the common SFT stacks, written as they stream.

:func:`export` consumes an iterator of :class:`TrainSample` once, writes each row as it comes (one
sample in memory at a time) into a temporary file beside the target and renames it into place at
the end, so an interrupted export leaves the old output, never half a new one.

Formats (row shapes in :mod:`agentworld.data.export_formats`), checked against each tool's docs:

- ``trl`` — TRL 1.16 ``SFTTrainer`` conversational prompt/completion rows (it trains only the
  completion); with a tokenizer, pre-tokenized ``input_ids``/``labels`` (+ ``assistant_masks``),
  which ``SFTTrainer`` uses as is ("a dataset that already provides a labels column is left as is").
- ``llama-factory`` — LLaMA-Factory ``data/README.md``: "Sharegpt Format" (``conversations`` of
  ``from``/``value`` with ``human``/``gpt``, a ``system`` column; description ``formatting:
  sharegpt``, ``columns: {messages: conversations, system: system}``) or "OpenAI Format"
  (``messages`` of ``role``/``content``; ``tags: {role_tag: role, content_tag: content, user_tag:
  user, assistant_tag: assistant, system_tag: system}``). ``dataset_info.json`` is written (merged)
  beside the data file. Train with ``mask_history: true`` so only the last turn (the target) trains.
- ``ms-swift`` — ms-swift ``docs/source_en/Customization/Custom-dataset.md``, standard ``messages``
  format, with the per-message ``"loss": true/false`` that applies to ``assistant`` messages and
  takes priority over ``--loss_scale``.
- ``hf-datasets`` — ``datasets.Dataset.from_generator`` over the ``trl`` rows, ``save_to_disk``.
- ``agentworld-bench`` — AgentWorldBench JSONL rows via the pipeline's ``samples_to_bench_rows``
  (exact round trip of ingested bench rows).

Masked samples (``mask.keep is False``) are dropped from training formats unless ``keep_masked``;
kept ones train nothing (``"loss": false``, labels -100). LLaMA-Factory cannot express that, so it
refuses ``keep_masked``. ``agentworld-bench`` is evaluation data: it keeps every sample.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Generator, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, Field

from agentworld.data import export_formats as ef
from agentworld.data.ingest import ingest
from agentworld.data.process import expand, samples_to_bench_rows
from agentworld.data.types import TrainSample
from agentworld.errors import DataError
from agentworld.io import atomic_write_jsonl, atomic_write_text

FORMATS: tuple[str, ...] = ("trl", "llama-factory", "ms-swift", "hf-datasets", "agentworld-bench")


class ExportReport(BaseModel):
    """What an export wrote, for the pipeline's log and the CLI's summary."""

    format: str
    out: str
    samples: int = 0
    """Samples read."""
    rows: int = 0
    """Rows written."""
    masked_dropped: int = 0
    masked_kept: int = 0
    files: list[str] = Field(default_factory=list)
    """Every file or folder written (the data, and ``dataset_info.json`` where there is one)."""


def export(samples: Iterable[TrainSample], fmt: str, out: Path, *, tokenizer: Any = None,
           keep_masked: bool = False, **options: Any) -> ExportReport:
    """Write ``samples`` to ``out`` in ``fmt`` and say what was written.

    Args:
        samples: Turn-level samples; consumed once, streaming.
        fmt: One of :data:`FORMATS`.
        out: The data file (a folder for ``hf-datasets``).
        tokenizer: For ``trl``/``hf-datasets``: a tokenizer with a chat template, or a local path or
            name to load one from (never downloaded). Rows are then ``input_ids``/``labels``.
        keep_masked: Keep masked-out samples, flagged so they train nothing.
        **options: ``style`` (``"sharegpt"``/``"openai"``, LLaMA-Factory), ``dataset_name``
            (LLaMA-Factory entry, default: the file's stem), ``assistant_masks`` (bool, tokenized
            TRL rows also carry ``assistant_masks``).

    Raises:
        ValueError: unknown format or option, or an option the format cannot honour.
    """
    out = Path(out)
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; known: {', '.join(FORMATS)}")
    unknown = set(options) - {"style", "dataset_name", "assistant_masks"}
    if unknown:
        raise ValueError(f"unknown export option(s): {', '.join(sorted(unknown))}")
    report = ExportReport(format=fmt, out=str(out))
    if fmt == "agentworld-bench":
        _write_jsonl(out, samples_to_bench_rows(_counted(samples, report)), report)
        return report
    style = options.get("style", "sharegpt")
    if fmt == "llama-factory":
        if style not in ("sharegpt", "openai"):
            raise ValueError(f"llama-factory style must be 'sharegpt' or 'openai', not {style!r}")
        if keep_masked:
            raise ValueError("llama-factory has no per-sample loss flag: masked samples cannot be kept "
                             "(use ms-swift or trl with --keep-masked)")
    if tokenizer is not None and fmt not in ("trl", "hf-datasets"):
        raise ValueError(f"--tokenizer applies to trl and hf-datasets, not {fmt}")
    if isinstance(tokenizer, (str, Path)):
        tokenizer = load_tokenizer(tokenizer)
    build = _row_builder(fmt, tokenizer, keep_masked, style=style,
                         assistant_masks=bool(options.get("assistant_masks", False)))
    rows = (build(s) for s in _filtered(_counted(samples, report), keep_masked, report))
    if fmt == "hf-datasets":
        _save_dataset(out, rows, report)
        return report
    _write_jsonl(out, rows, report)
    if fmt == "llama-factory":
        name = str(options.get("dataset_name") or out.stem)
        info_path = _merge_dataset_info(out.parent / "dataset_info.json", name,
                                        ef.llama_factory_dataset_info(out.name, style))
        report.files.append(str(info_path))
    return report


def load_tokenizer(name_or_path: str | Path) -> Any:
    """Load a tokenizer from a local folder or the local cache only: exports never download."""
    from transformers import AutoTokenizer

    looks_like_path = isinstance(name_or_path, Path) or name_or_path.startswith(("/", ".", "~"))
    if looks_like_path and not Path(name_or_path).expanduser().is_dir():
        raise ValueError(f"no tokenizer folder at {name_or_path}")
    try:
        tok = AutoTokenizer.from_pretrained(str(Path(name_or_path).expanduser()) if looks_like_path
                                            else name_or_path, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot load tokenizer {name_or_path!s} from local files (exports never "
                         f"download; pass a folder with the tokenizer files): {exc}") from None
    if not getattr(tok, "chat_template", None):
        raise ValueError(f"tokenizer {name_or_path} has no chat template; the labels need one")
    return tok


def _row_builder(fmt: str, tokenizer: Any, keep_masked: bool, *, style: str,
                 assistant_masks: bool) -> Callable[[TrainSample], dict[str, Any]]:
    if fmt in ("trl", "hf-datasets"):
        if tokenizer is not None:
            return lambda s: ef.tokenized_row(s, tokenizer, assistant_masks=assistant_masks)
        return lambda s: ef.trl_row(s, keep_masked=keep_masked)
    if fmt == "llama-factory":
        return lambda s: ef.llama_factory_row(s, "openai" if style == "openai" else "sharegpt")
    return ef.ms_swift_row


def _counted(samples: Iterable[TrainSample], report: ExportReport) -> Iterator[TrainSample]:
    for sample in samples:
        report.samples += 1
        yield sample


def _filtered(samples: Iterable[TrainSample], keep_masked: bool,
              report: ExportReport) -> Iterator[TrainSample]:
    for sample in samples:
        if not ef.trained(sample):
            if not keep_masked:
                report.masked_dropped += 1
                continue
            report.masked_kept += 1
        yield sample


def _write_jsonl(out: Path, rows: Iterable[dict[str, Any]], report: ExportReport) -> None:
    """Stream rows into ``out`` atomically (a temporary file renamed into place at the end)."""
    report.rows += atomic_write_jsonl(out, rows)
    report.files.append(str(out))


def _save_dataset(out: Path, rows: Iterable[dict[str, Any]], report: ExportReport) -> None:
    """``Dataset.from_generator`` (Arrow-backed, so it streams) → ``save_to_disk`` → rename into place.

    The generator's cache goes to a scratch folder beside ``out`` (not the user's HF cache) and a
    fresh fingerprint skips hashing the generator, whose iterator cannot be hashed or reused. An
    error inside the generator is re-raised as itself, not wrapped by ``datasets``.
    """
    from datasets import Dataset
    from datasets.exceptions import DatasetGenerationError

    def gen() -> Iterator[dict[str, Any]]:
        for row in rows:
            report.rows += 1
            yield row

    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.", dir=out.parent) as scratch:
        try:
            dataset = Dataset.from_generator(gen, cache_dir=str(Path(scratch) / "cache"),
                                             fingerprint=uuid.uuid4().hex)
        except DatasetGenerationError as exc:  # surface our own error (a located DataError, say)
            raise (exc.__cause__ or exc) from None
        staged = Path(scratch) / "dataset"
        dataset.save_to_disk(str(staged))
        del dataset
        old = Path(scratch) / "old"
        if out.exists():
            os.replace(out, old)  # moved aside in the same folder, removed with the scratch dir
        os.replace(staged, out)
        shutil.rmtree(old, ignore_errors=True)
    report.files.append(str(out))


def _merge_dataset_info(path: Path, name: str, entry: dict[str, Any]) -> Path:
    """Add or replace one entry, keeping the others: a ``dataset_dir`` usually holds several."""
    info: dict[str, Any] = {}
    if path.exists():
        try:
            info = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError as exc:
            raise DataError(f"existing dataset_info.json is not JSON: {exc}", path=str(path)) from None
    info[name] = entry
    atomic_write_text(path, orjson.dumps(info, option=orjson.OPT_INDENT_2).decode() + "\n")
    return path


# -- input for the CLI ----------------------------------------------------------------------------

def read_samples(path: Path) -> Iterator[TrainSample]:
    """Stream an export's input: TrainSample JSONL, or trajectories expanded on the fly.

    A first row with ``trajectory_id`` means samples (the pipeline's output). Anything else is read
    as trajectories through the pipeline's ``ingest`` (any format it detects: unified trajectories,
    AgentWorldBench rows, chat logs) and expanded with its ``expand``.
    """
    rows = _jsonl(path)
    first = next(rows, None)
    if first is None:
        return
    if not (isinstance(first[1], dict) and "trajectory_id" in first[1]):
        rows.close()  # the file is read again, by ingest
        yield from expand(ingest(path))
        return
    for n, r in _chain(first, rows):
        yield _parse(r, path, n)


def _jsonl(path: Path) -> Generator[tuple[int, Any], None, None]:
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            if raw.strip():
                try:
                    yield lineno, orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    raise DataError(f"malformed JSON: {exc}", path=str(path), line=lineno) from None


def _chain(first: tuple[int, Any], rest: Iterator[tuple[int, Any]]) -> Iterator[tuple[int, Any]]:
    yield first
    yield from rest


def _parse(row: Any, path: Path, line: int) -> TrainSample:
    try:
        return TrainSample.model_validate(row)
    except ValueError as exc:
        sid = row.get("id") if isinstance(row, dict) else None
        raise DataError(f"not a TrainSample: {exc}".splitlines()[0], path=str(path), line=line,
                        sample_id=str(sid) if sid is not None else None) from None

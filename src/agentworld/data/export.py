"""Exports of turn-level training samples for the common SFT stacks, written as they stream.

:func:`export` consumes an iterator of :class:`TrainSample` once, writes each row as it comes (one
sample in memory at a time) into a temporary file beside the target and renames it into place at
the end, so an interrupted export leaves the old output, never half a new one.

Every format keeps the split (:mod:`agentworld.data.sides`): the train side goes to ``out``, the
eval side to ``eval_out`` (default beside it: ``train.jsonl`` → ``eval.jsonl``), and
``hf-datasets`` saves a ``DatasetDict`` with ``train`` and ``test``. Without a split step every
sample is on the train side and the eval file is empty; a trajectory on both sides is an error.

Formats (row shapes in :mod:`agentworld.data.export_formats`), checked against each tool's docs:

- ``trl`` — TRL 1.16 ``SFTTrainer`` conversational prompt/completion rows (it trains only the
  completion); with a tokenizer, pre-tokenized ``input_ids``/``labels`` (+ ``assistant_masks``),
  which ``SFTTrainer`` uses as is ("a dataset that already provides a labels column is left as is").
- ``llama-factory`` — LLaMA-Factory ``data/README.md``: "Sharegpt Format" (``conversations`` of
  ``from``/``value`` with ``human``/``gpt``, a ``system`` column; description ``formatting:
  sharegpt``, ``columns: {messages: conversations, system: system}``) or "OpenAI Format"
  (``messages`` of ``role``/``content``; ``tags: {role_tag: role, content_tag: content, user_tag:
  user, assistant_tag: assistant, system_tag: system}``). ``dataset_info.json`` is written (merged)
  beside the data file, with one entry per side (``<name>`` and ``<name>_eval``: the training
  YAML's ``dataset`` and ``eval_dataset``). Train with ``mask_history: true`` so only the last turn
  (the target) trains.
- ``ms-swift`` — ms-swift ``docs/source_en/Customization/Custom-dataset.md``, standard ``messages``
  format, with the per-message ``"loss": true/false`` that applies to ``assistant`` messages and
  takes priority over ``--loss_scale``.
- ``hf-datasets`` — a ``datasets.DatasetDict`` of the ``trl`` rows (``train``, ``test``: TRL's
  default split names), ``save_to_disk``; ``load_from_disk`` gives it back.
- ``agentworld-bench`` — AgentWorldBench JSONL rows via the pipeline's ``samples_to_bench_rows``
  (exact round trip of ingested bench rows).
- ``samples`` — the :class:`TrainSample` rows themselves (mask and split included).

Masked samples (``mask.keep is False``) are dropped from training formats unless ``keep_masked``;
kept ones train nothing (``"loss": false``, labels -100). LLaMA-Factory cannot express that, so it
refuses ``keep_masked``. ``agentworld-bench`` and ``samples`` keep every sample.
"""

from __future__ import annotations

import itertools
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
from agentworld.data.records import PlainSample
from agentworld.data.sides import Side, SideGuard, check_paths, eval_path_for, side_of, write_sides
from agentworld.data.types import TrainSample
from agentworld.errors import DataError
from agentworld.inputs import lines
from agentworld.io import atomic_write_text

FORMATS: tuple[str, ...] = ("trl", "llama-factory", "ms-swift", "hf-datasets", "agentworld-bench", "samples")
HF_SPLITS: dict[Side, str] = {"train": "train", "eval": "test"}
"""The ``DatasetDict`` split of each side (``test`` is TRL's ``dataset_test_split`` default)."""


class ExportReport(BaseModel):
    """What an export wrote, for the pipeline's log and the CLI's summary."""

    format: str
    out: str
    """The train side (for ``hf-datasets``, the ``DatasetDict`` folder holding both)."""
    eval_out: str | None = None
    """The eval side's file (None for ``hf-datasets``: its ``test`` split)."""
    samples: int = 0
    """Samples read, both sides."""
    eval_samples: int = 0
    """Samples read on the eval side."""
    rows: int = 0
    """Rows written on the train side."""
    eval_rows: int = 0
    """Rows written on the eval side."""
    masked_dropped: int = 0
    masked_kept: int = 0
    files: list[str] = Field(default_factory=list)
    """Every file or folder written (the data, and ``dataset_info.json`` where there is one)."""


def export(samples: Iterable[TrainSample], fmt: str, out: Path, *, eval_out: Path | None = None,
           tokenizer: Any = None, keep_masked: bool = False, **options: Any) -> ExportReport:
    """Write the train side of ``samples`` to ``out``, the eval side beside it, and say what was written.

    Args:
        samples: Turn-level samples; consumed once, streaming. Their ``split`` picks the side.
        fmt: One of :data:`FORMATS`.
        out: The train side's data file (for ``hf-datasets``, the folder of both sides).
        eval_out: The eval side's data file (default :func:`~agentworld.data.sides.eval_path_for`);
            not for ``hf-datasets``, whose ``test`` split is the eval side.
        tokenizer: For ``trl``/``hf-datasets``: a tokenizer with a chat template, or a local path or
            name to load one from (never downloaded). Rows are then ``input_ids``/``labels``.
        keep_masked: Keep masked-out samples, flagged so they train nothing.
        **options: ``style`` (``"sharegpt"``/``"openai"``, LLaMA-Factory), ``dataset_name``
            (LLaMA-Factory train entry, default: the file's stem; the eval entry adds ``_eval``),
            ``assistant_masks`` (bool, tokenized TRL rows also carry ``assistant_masks``).

    Raises:
        ValueError: unknown format or option, or an option the format cannot honour.
        DataError: a trajectory with samples on both sides.
    """
    out = Path(out)
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; known: {', '.join(FORMATS)}")
    unknown = set(options) - {"style", "dataset_name", "assistant_masks"}
    if unknown:
        raise ValueError(f"unknown export option(s): {', '.join(sorted(unknown))}")
    if fmt == "hf-datasets" and eval_out is not None:
        raise ValueError("hf-datasets keeps the eval side in the folder's 'test' split: no eval_out")
    held = None if fmt == "hf-datasets" else Path(eval_out) if eval_out is not None else eval_path_for(out)
    if held is not None:
        check_paths(out, held)
    report = ExportReport(format=fmt, out=str(out), eval_out=str(held) if held is not None else None)
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
    sided = _sided(samples, report)
    rows: Iterator[tuple[Side, dict[str, Any]]]
    if fmt == "agentworld-bench":  # a trajectory is never on both sides, so each run is whole trajectories
        rows = ((side, row) for side, run in itertools.groupby(sided, key=lambda p: p[0])
                for row in samples_to_bench_rows(s for _, s in run))
    elif fmt == "samples":
        rows = ((side, s.to_row() if isinstance(s, PlainSample) else s.model_dump(mode="json"))
                for side, s in sided)
    else:
        build = _row_builder(fmt, tokenizer, keep_masked, style=style,
                             assistant_masks=bool(options.get("assistant_masks", False)))
        rows = ((side, build(s)) for side, s in _filtered(sided, keep_masked, report))
    if held is None:
        _save_dataset(out, rows, report)
        return report
    report.rows, report.eval_rows = write_sides(out, held, rows)
    report.files += [str(out), str(held)]
    if fmt == "llama-factory":
        report.files.append(str(write_llama_factory_info(out, held, style, options.get("dataset_name"))))
    return report


def write_llama_factory_info(out: Path, eval_out: Path, style: str, dataset_name: str | None) -> Path:
    """Merge the two entries of an export into ``dataset_info.json`` beside ``out``; returns its path.

    The train entry is ``dataset_name`` (default: ``out``'s stem), the eval entry the same name with
    ``_eval``; LLaMA-Factory finds files by ``file_name`` relative to ``dataset_dir``, so an eval file
    in another folder is named by its path relative to ``out``'s.
    """
    name = str(dataset_name or out.stem)
    kind: ef.LlamaFactoryStyle = "openai" if style == "openai" else "sharegpt"
    info = out.parent / "dataset_info.json"
    _merge_dataset_info(info, {name: ef.llama_factory_dataset_info(out.name, kind),
                               f"{name}_eval": ef.llama_factory_dataset_info(
                                   os.path.relpath(eval_out, out.parent), kind)})
    return info


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


def _sided(samples: Iterable[TrainSample], report: ExportReport) -> Iterator[tuple[Side, TrainSample]]:
    """Each sample with its side, counted; a trajectory seen on the other side before is an error."""
    guard = SideGuard()
    for sample in samples:
        side = side_of(sample)
        guard.add(sample.trajectory_id, side, sample.id)
        report.samples += 1
        report.eval_samples += side == "eval"
        yield side, sample


def _filtered(samples: Iterable[tuple[Side, TrainSample]], keep_masked: bool,
              report: ExportReport) -> Iterator[tuple[Side, TrainSample]]:
    for side, sample in samples:
        if not ef.trained(sample):
            if not keep_masked:
                report.masked_dropped += 1
                continue
            report.masked_kept += 1
        yield side, sample


def _save_dataset(out: Path, rows: Iterable[tuple[Side, dict[str, Any]]], report: ExportReport) -> None:
    """Both sides as one ``DatasetDict`` (``train``, ``test``) → ``save_to_disk`` → rename into place.

    The rows stream into one scratch JSONL per side beside ``out`` (memory stays flat), and each
    side is built with ``Dataset.from_generator`` reading its file back. The generator's cache goes
    to the scratch folder (not the user's HF cache); a fresh fingerprint skips hashing it. An
    empty side gets the other side's columns (``datasets`` cannot infer them from no rows).
    """
    from datasets import Dataset, DatasetDict

    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.", dir=out.parent) as scratch:
        files = {side: Path(scratch) / f"{side}.jsonl" for side in HF_SPLITS}
        report.rows, report.eval_rows = write_sides(files["train"], files["eval"], rows)
        if not report.rows + report.eval_rows:
            raise ValueError(f"hf-datasets: no rows to save ({report.samples} samples read, "
                             f"{report.masked_dropped} masked out)")

        def read(path: str) -> Iterator[dict[str, Any]]:
            with open(path, "rb") as handle:
                yield from (orjson.loads(line) for line in handle)

        built = {side: Dataset.from_generator(read, gen_kwargs={"path": str(path)},
                                              cache_dir=str(Path(scratch) / "cache"),
                                              fingerprint=uuid.uuid4().hex)
                 for side, path in files.items() if path.stat().st_size}
        features = next(iter(built.values())).features
        empty: dict[str, list[Any]] = {k: [] for k in features}
        splits = {HF_SPLITS[side]: built[side] if side in built
                  else Dataset.from_dict(empty, features=features) for side in HF_SPLITS}
        staged = Path(scratch) / "dataset"
        # an empty split saved with the default shard count writes no shard, which load_from_disk rejects
        DatasetDict(splits).save_to_disk(str(staged),
                                         num_shards={k: 1 for k, d in splits.items() if not len(d)})
        del built, splits
        old = Path(scratch) / "old"
        if out.exists():
            os.replace(out, old)  # moved aside in the same folder, removed with the scratch dir
        os.replace(staged, out)
        shutil.rmtree(old, ignore_errors=True)
    report.files.append(str(out))


def _merge_dataset_info(path: Path, entries: dict[str, dict[str, Any]]) -> Path:
    """Add or replace ``entries``, keeping the others: a ``dataset_dir`` usually holds several."""
    info: dict[str, Any] = {}
    if os.path.lexists(path):
        from agentworld.inputs import read_bytes

        try:
            info = orjson.loads(read_bytes(path))  # a FIFO or a device there is refused, not waited on
        except orjson.JSONDecodeError as exc:
            raise DataError(f"existing dataset_info.json is not JSON: {exc}", path=str(path)) from None
        if not isinstance(info, dict):
            raise DataError("existing dataset_info.json is not a JSON object of entries", path=str(path))
    info.update(entries)
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
    for lineno, _, raw in lines(path, what="data file"):
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

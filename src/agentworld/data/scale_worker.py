"""The scale-out's worker: the pipeline's own chain on one shard, its records and dedup passed in.

:func:`run_shard` gives :func:`agentworld.data.pipeline.plain_samples` a record source that reads
only the shard's byte range (:func:`shard_source`) and a ``dedup`` seeded with the keys earlier
shards already produced (:func:`seeded_dedup`); nothing is patched, so shards may run in threads,
processes or Ray tasks alike.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson
from pydantic import BaseModel, Field

from agentworld.data import pipeline as pipe
from agentworld.data.ingest import IngestReport, LocatedRecord, OnError, RecordSource, skip_or_raise
from agentworld.data.pipeline import PipelineConfig
from agentworld.data.process import DatasetStats, DatasetTally, DedupKeys, StepCounter
from agentworld.data.records import PlainSample
from agentworld.data.scale_plan import Shard
from agentworld.data.sides import side_of
from agentworld.data.types import StepStats, TrainSample
from agentworld.errors import DataError

KEY_SIZE = 16


class ShardTask(BaseModel):
    """What a worker needs: the config (JSON, so any transport works), the shard, where to write."""

    config_json: str
    shard: Shard
    out_dir: str
    output_format: str
    preseen_file: str | None = None
    """16-byte dedup keys seen in earlier shards that this shard also holds (a re-run)."""
    attempt: int = 0


class ShardError(BaseModel):
    """A :class:`DataError` raised in a worker, with its shard-relative line."""

    message: str
    path: str | None = None
    line: int | None = None
    sample_id: str | None = None
    field: str | None = None


class ShardResult(BaseModel):
    """Everything the merge needs from one shard; small (the data stays in files)."""

    index: int
    steps: list[StepStats] = Field(default_factory=list)
    ingest: IngestReport = Field(default_factory=IngestReport)
    dataset: DatasetStats = Field(default_factory=DatasetStats)
    output: dict[str, Any] = Field(default_factory=dict)
    out_file: str = ""
    keys_file: str | None = None
    sides_file: str | None = None
    """``[trajectory id, side, sample id]`` JSONL: each trajectory's first sample on each side, in order."""
    lines: int = 0
    records: int = 0
    first: tuple[str, int] | None = None
    """(trajectory id, turn) of the shard's first output sample."""
    last_trajectory: str | None = None
    error: ShardError | None = None


def dedup_key(sample: TrainSample) -> bytes:
    """The key :func:`agentworld.data.process.dedup` uses (kept equal to it by a test).

    The reference definition; the dedup steps compute the same bytes incrementally (``DedupKeys``).
    """
    return hashlib.blake2b(orjson.dumps([sample.system, sample.history, sample.action, sample.observation]),
                           digest_size=KEY_SIZE).digest()


def shard_source(shard: Shard, counts: dict[str, int]) -> RecordSource:
    """The records of ``shard``'s byte range, as :func:`~agentworld.data.ingest.located_records` gives
    a whole file's: shard-relative lines, file-wide offsets and record indexes. ``counts`` gets the
    lines and records read (the merge shifts later shards by them)."""
    def records(path: Path, on_error: OnError = "raise",
                report: IngestReport | None = None) -> Iterator[LocatedRecord]:
        with open(path, "rb") as handle:
            handle.seek(shard.start)
            pos = shard.start
            index = shard.index_offset
            lineno = 0
            while shard.end < 0 or pos < shard.end:
                raw = handle.readline()
                if not raw:
                    break
                start, pos = pos, pos + len(raw)
                lineno += 1
                counts["lines"] = lineno
                if not raw.strip():
                    continue
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    skip_or_raise(DataError(f"malformed JSON: {exc}", path=str(path), line=lineno), on_error,
                                  report)
                    continue
                counts["records"] = index - shard.index_offset + 1
                yield lineno, start, index, obj
                index += 1
    return records


def seeded_dedup(preseen: set[bytes], keys_out: BinaryIO) -> Callable[..., Iterator[Any]]:
    """A drop-in for ``process.dedup`` whose seen-set starts with ``preseen``; it records every key."""
    def dedup(samples: Iterable[Any], stats: StepCounter | None = None) -> Iterator[Any]:
        tally = stats if stats is not None else StepCounter("dedup")
        seen: set[bytes] = set()
        key_of = DedupKeys()
        for sample in samples:
            tally.inputs += 1
            key = key_of(sample)
            if key in seen or key in preseen:
                if key not in seen:
                    seen.add(key)
                    keys_out.write(key)
                tally.dropped += 1
                continue
            seen.add(key)
            keys_out.write(key)
            tally.outputs += 1
            yield sample
    return dedup


def read_keys(path: str | None) -> set[bytes]:
    if path is None or not os.path.exists(path):
        return set()
    data = Path(path).read_bytes()
    return {data[i:i + KEY_SIZE] for i in range(0, len(data), KEY_SIZE)}


def run_shard(task: ShardTask) -> ShardResult:
    """Run the configured chain on one shard and write its output file (the worker entry point)."""
    config = PipelineConfig.model_validate_json(task.config_json)
    shard = task.shard
    spec = config.inputs[shard.input_index].model_copy(update={"format": shard.format})
    stem = Path(task.out_dir) / f"shard-{shard.index:06d}-{task.attempt}"
    out_file = stem.with_suffix(".jsonl")
    keys_file = stem.with_suffix(".keys")
    sides_file = stem.with_suffix(".sides")
    output = config.output.model_copy(update={"path": out_file, "eval_path": None,
                                              "format": task.output_format})
    sub = config.model_copy(update={"inputs": [spec], "output": output})
    result = ShardResult(index=shard.index, out_file=str(out_file))
    counts = {"lines": 0, "records": 0}
    counters: list[StepCounter] = []
    reports: list[IngestReport] = []
    dataset = DatasetTally()
    first: list[tuple[str, int]] = []
    last: list[str] = []
    sides: set[tuple[str, str]] = set()

    def observed(samples: Iterable[PlainSample], sides_out: BinaryIO) -> Iterator[PlainSample]:
        for sample in samples:
            if not first:
                first.append((sample.trajectory_id, sample.turn))
            last[:] = [sample.trajectory_id]
            side = (sample.trajectory_id, side_of(sample))
            if side not in sides:  # the merge checks that no trajectory is on both sides across shards
                sides.add(side)
                sides_out.write(orjson.dumps([*side, sample.id], option=orjson.OPT_APPEND_NEWLINE))
            yield dataset.add(sample)

    uses_dedup = any(s.name == "dedup" for s in config.steps)
    with open(keys_file, "wb") as keys_out, open(sides_file, "wb") as sides_out:
        dedup = seeded_dedup(read_keys(task.preseen_file), keys_out)
        source = None if shard.whole else shard_source(shard, counts)
        try:
            samples = observed(pipe.plain_samples(sub, counters=counters, reports=reports, source=source,
                                                  steps={"dedup": dedup}), sides_out)
            result.output = pipe._write_output(samples, output)
        except DataError as err:
            result.error = ShardError(message=err.message, path=err.path, line=err.line,
                                      sample_id=err.sample_id, field=err.field)
    result.steps = [c.stats() for c in counters]
    result.ingest = reports[0] if reports else IngestReport()
    result.dataset = dataset.stats()
    result.keys_file = str(keys_file) if uses_dedup else None
    result.sides_file = str(sides_file)
    result.lines, result.records = counts["lines"], counts["records"]
    result.first = first[0] if first else None
    result.last_trajectory = last[0] if last else None
    if shard.whole:
        result.records = result.ingest.trajectories  # unused for whole files: no offset follows them
    return result

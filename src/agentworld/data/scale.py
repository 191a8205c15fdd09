"""Scale-out of the data pipeline: the same chain over byte-range shards, in processes or on Ray.

:func:`run_parallel` cuts every JSONL input into byte ranges, runs the configured chain
(:func:`agentworld.data.pipeline.iter_samples` and the same export) on each range in a worker
process, and concatenates the per-shard outputs in input order. The result — the output file and
every count of ``stats.json`` except ``elapsed_s`` — is identical to :func:`run_pipeline`'s.
:func:`agentworld.data.scale_ray.run_ray` runs the same shards as Ray tasks.

Why it is exact, step by step:

- **Shard boundaries.** Converters group records: AgentWorldBench rows of one trajectory are
  consecutive lines with the same (task, system prompt, prompt/response lists). A cut is placed
  only at a line start where the line before and the line after are both valid rows whose
  group key *and* trajectory id (the row id without ``-t<n>``) differ, so the converter starts a
  new trajectory there in the sequential run too, and samples of one trajectory never straddle
  two shards (which keeps the ``agentworld-bench`` export's per-trajectory grouping intact).
  One-record-per-line formats (``unified``, ``generic``, ``openai-chat``) are cut between lines
  whose explicit ids (``id``/``task_id``/``trial``) differ. The planner reads only a few lines
  around each cut; a worker seeks to its start and reads whole lines up to its end. JSON array
  files, formats registered by third parties (whose grouping is unknown) and recordings with
  incremental rows (``record mcp``: a session's rows may lie anywhere) are one shard each.
- **Per-trajectory and per-sample steps** (cleaning, expansion, masking, split) depend only on
  the trajectory or sample: the split is a stable hash of the source and the mask keep decision
  a stable hash of the sample id, so they run unchanged inside the shard.
- **Dedup** is global: a sample is dropped when any earlier sample, in any shard, had the same
  key. Workers run dedup locally and write the 16-byte key of every sample reaching it. At merge
  time the keys are walked in shard order; a shard that holds a key first seen in an earlier
  shard is run again with those keys pre-seeded (so it drops them, as the sequential run does).
  Without cross-shard duplicates (the usual case) nothing runs twice; memory at merge is one
  digest per distinct sample, as in the sequential dedup.
- **Line numbers and record indexes.** Workers count lines and records of their range; issue and
  error line numbers are shifted by the lines of earlier shards of the same file (the warnings
  workers *log* for skipped lines still name shard-relative lines). Converters
  that name id-less records by their index (``generic``, ``openai-chat``) get the index offset
  from a fast line count by the planner; a shard whose guess turns out wrong (a malformed line
  skipped before it) is run again with the true offset.
- **Statistics** (step tallies, ingest reports, dataset stats, export counts) are summed in shard
  order, which also reproduces the key order of every ``details`` dict.

Outputs in the JSONL formats (``samples``, ``trl``, ``ms-swift``, ``llama-factory``,
``agentworld-bench``) are concatenated; ``hf-datasets`` (a folder) is written by the parent from
the workers' sample files, so only the steps run in parallel there.
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO, Literal

import orjson
from pydantic import BaseModel, Field
from rich.console import Console

from agentworld import schema
from agentworld.data import ingest as ingest_mod
from agentworld.data import pipeline as pipe
from agentworld.data.bench_rows import may_hold_incremental_rows
from agentworld.data.ingest import MAX_LISTED_ISSUES, IngestIssue, IngestReport, detect_format
from agentworld.data.pipeline import PipelineConfig, PipelineReport
from agentworld.data.process import DatasetStats, DatasetTally, DedupKeys, Histogram, StepCounter
from agentworld.data.records import PlainSample
from agentworld.data.types import StepStats, TrainSample
from agentworld.errors import DataError
from agentworld.io import atomic_write_text

StartMethod = Literal["spawn", "forkserver"]
JSONL_FORMATS = frozenset({"samples", "trl", "ms-swift", "llama-factory", "agentworld-bench"})
"""Output formats whose shard files concatenate into the whole output."""
BENCH_FORMATS = frozenset({"agentworld-bench", "recording"})
LINE_FORMATS = frozenset({"unified", "generic", "openai-chat"})
INDEXED_FORMATS = frozenset({"generic", "openai-chat"})
"""Converters that name id-less records by their index in the file (the index must be exact)."""
KEY_SIZE = 16


class Shard(BaseModel):
    """One byte range ``[start, end)`` of one input, aligned on trajectory boundaries."""

    index: int
    input_index: int
    path: str
    format: str
    start: int = 0
    end: int = -1
    """-1: to the end of the file (also the value for a whole-file shard)."""
    whole: bool = False
    """Read by the converter itself (JSON arrays, third-party formats): no range is applied."""
    index_offset: int = 0
    """Records before ``start`` (only meaningful for :data:`INDEXED_FORMATS`)."""


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
    lines: int = 0
    records: int = 0
    first: tuple[str, int] | None = None
    """(trajectory id, turn) of the shard's first output sample."""
    last_trajectory: str | None = None
    error: ShardError | None = None


# -- planning ----------------------------------------------------------------------------------------

def _resolved_format(path: Path, fmt: str) -> str:
    return detect_format(path) if fmt == "auto" else fmt


def _bench_ident(raw: bytes, known_domains: Sequence[str] | None) -> tuple[bytes, str] | None:
    """(group key, trajectory id) of a bench row, or None when the converter would skip the line."""
    if not raw.strip():
        return None
    try:
        sample = schema.parse_row(orjson.loads(raw), known_domains=known_domains)
    except (orjson.JSONDecodeError, DataError):
        return None
    key = hashlib.blake2b(orjson.dumps([sample.task, sample.system_str, sample.prompt,
                                        sample.response])).digest()
    head, _, tail = sample.id.rpartition("-t")
    return key, head if head and tail.isdigit() else sample.id


def _line_ident(raw: bytes, where: int) -> tuple[Any, ...] | None:
    """Explicit ids of a one-record line; records without any are unique (named by position)."""
    if not raw.strip():
        return None
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if isinstance(obj, dict):
        ids = tuple(str(obj.get(k)) for k in ("id", "task_id", "trial"))
        if any(v != "None" for v in ids):
            return ids
    return ("@", where)


def _safe_cut(handle: BinaryIO, approx: int, size: int, fmt: str, options: dict[str, Any]) -> int:
    """The first line start at or after ``approx`` where a new trajectory begins (``size`` if none)."""
    known = options.get("known_domains", list(schema.DOMAIN_NAMES))
    handle.seek(max(approx - 1, 0))
    if approx > 0:
        handle.readline()  # to the next line start (a no-op read of "\n" when approx already is one)
    pos = handle.tell()
    prev_raw = handle.readline()
    prev_at = pos
    while True:
        pos = handle.tell()
        if pos >= size:
            return size
        raw = handle.readline()
        if fmt in BENCH_FORMATS:
            a, b = _bench_ident(prev_raw, known), _bench_ident(raw, known)
            if a is not None and b is not None and a[0] != b[0] and a[1] != b[1]:
                return pos
        else:
            c, d = _line_ident(prev_raw, prev_at), _line_ident(raw, pos)
            if c is not None and d is not None and c != d:
                return pos
        prev_raw, prev_at = raw, pos


def _count_records(path: Path, cuts: list[int]) -> list[int]:
    """Non-blank lines before each cut: the converters' record index there (barring malformed lines)."""
    counts: list[int] = []
    n = 0
    with open(path, "rb") as handle:
        pos = 0
        targets = iter(cuts)
        target = next(targets, None)
        for raw in handle:
            while target is not None and pos >= target:
                counts.append(n)
                target = next(targets, None)
            if target is None:
                break
            if raw.strip():
                n += 1
            pos += len(raw)
        while target is not None:
            counts.append(n)
            target = next(targets, None)
    return counts


def plan_shards(config: PipelineConfig, shards: int, *, min_shard_bytes: int = 1 << 20) -> list[Shard]:
    """Cut the inputs into about ``shards`` byte ranges (in proportion to file size), in input order.

    Args:
        config: The pipeline config; ``format: auto`` inputs are resolved here, once.
        shards: Target number of shards over all inputs (more than the workers, for balance).
        min_shard_bytes: No shard is planned smaller than this (worker start-up is not free).
    """
    sizes = [spec.path.stat().st_size if spec.path.is_file() else 0 for spec in config.inputs]
    total = max(sum(sizes), 1)
    out: list[Shard] = []
    for i, (spec, size) in enumerate(zip(config.inputs, sizes, strict=True)):
        if not spec.path.is_file():  # let the worker raise the pipeline's own error
            out.append(Shard(index=len(out), input_index=i, path=str(spec.path), format=spec.format,
                             whole=True))
            continue
        fmt = _resolved_format(spec.path, spec.format)
        rangeable = (fmt in BENCH_FORMATS or fmt in LINE_FORMATS) \
            and not ingest_mod._array_document(spec.path) \
            and not (fmt == "recording" and may_hold_incremental_rows(spec.path))
        want = min(max(1, round(shards * size / total)), max(1, size // max(min_shard_bytes, 1)))
        if not rangeable or want == 1:
            out.append(Shard(index=len(out), input_index=i, path=str(spec.path), format=fmt, whole=True))
            continue
        cuts: list[int] = []
        with open(spec.path, "rb") as handle:
            for k in range(1, want):
                approx = size * k // want
                if cuts and approx <= cuts[-1]:
                    continue
                cut = _safe_cut(handle, approx, size, fmt, spec.options)
                if cut >= size:
                    break
                if not cuts or cut > cuts[-1]:
                    cuts.append(cut)
        offsets = _count_records(spec.path, cuts) if fmt in INDEXED_FORMATS else [0] * len(cuts)
        bounds = [0, *cuts, size]
        for k in range(len(bounds) - 1):
            out.append(Shard(index=len(out), input_index=i, path=str(spec.path), format=fmt,
                             start=bounds[k], end=bounds[k + 1], index_offset=([0, *offsets])[k]))
    return out


# -- the worker --------------------------------------------------------------------------------------

def dedup_key(sample: TrainSample) -> bytes:
    """The key :func:`agentworld.data.process.dedup` uses (kept equal to it by a test).

    The reference definition; the dedup steps compute the same bytes incrementally (``DedupKeys``).
    """
    return hashlib.blake2b(orjson.dumps([sample.system, sample.history, sample.action, sample.observation]),
                           digest_size=KEY_SIZE).digest()


def _ranged_records(shard: Shard, on_error: ingest_mod.OnError, report: IngestReport | None,
                    counts: dict[str, int]) -> Iterator[tuple[int | None, int | None, int, Any]]:
    """:func:`ingest.located_records` over ``[start, end)``: shard-relative lines, file-wide offsets
    and record indexes."""
    with open(shard.path, "rb") as handle:
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
                err = DataError(f"malformed JSON: {exc}", path=shard.path, line=lineno)
                ingest_mod.skip_or_raise(err, on_error, report)
                continue
            counts["records"] = index - shard.index_offset + 1
            yield lineno, start, index, obj
            index += 1


def _seeded_dedup(preseen: set[bytes], keys_out: BinaryIO) -> Callable[..., Iterator[Any]]:
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


def _read_keys(path: str | None) -> set[bytes]:
    if path is None or not os.path.exists(path):
        return set()
    data = Path(path).read_bytes()
    return {data[i:i + KEY_SIZE] for i in range(0, len(data), KEY_SIZE)}


@contextlib.contextmanager
def _patched(shard: Shard, counts: dict[str, int],
             dedup: Callable[..., Iterator[TrainSample]]) -> Iterator[None]:
    """Point ``ingest.located_records`` (under ``ingest.records`` too) at the shard's range and the
    pipeline's ``dedup`` at the seeded one.

    Module globals are swapped only for the duration of one shard, inside a worker process (or
    a Ray worker), so the chain that runs is the pipeline's own, not a copy of it.
    """
    original_records = ingest_mod.located_records
    original_dedup = pipe.SAMPLE_STEPS["dedup"]

    def located_records(path: Path, on_error: ingest_mod.OnError = "raise", report: IngestReport | None = None
                        ) -> Iterator[tuple[int | None, int | None, int, Any]]:
        if not shard.whole and str(path) == shard.path:
            return _ranged_records(shard, on_error, report, counts)
        return original_records(path, on_error, report)

    ingest_mod.located_records = located_records
    pipe.SAMPLE_STEPS["dedup"] = dedup
    try:
        yield
    finally:
        ingest_mod.located_records = original_records
        pipe.SAMPLE_STEPS["dedup"] = original_dedup


def run_shard(task: ShardTask) -> ShardResult:
    """Run the configured chain on one shard and write its output file (the worker entry point)."""
    config = PipelineConfig.model_validate_json(task.config_json)
    shard = task.shard
    spec = config.inputs[shard.input_index].model_copy(update={"format": shard.format})
    stem = Path(task.out_dir) / f"shard-{shard.index:06d}-{task.attempt}"
    out_file = stem.with_suffix(".jsonl")
    keys_file = stem.with_suffix(".keys")
    output = config.output.model_copy(update={"path": out_file, "format": task.output_format})
    sub = config.model_copy(update={"inputs": [spec], "output": output})
    result = ShardResult(index=shard.index, out_file=str(out_file))
    counts = {"lines": 0, "records": 0}
    counters: list[StepCounter] = []
    reports: list[IngestReport] = []
    dataset = DatasetTally()
    first: list[tuple[str, int]] = []
    last: list[str] = []

    def observed(samples: Iterable[PlainSample]) -> Iterator[PlainSample]:
        for sample in samples:
            if not first:
                first.append((sample.trajectory_id, sample.turn))
            last[:] = [sample.trajectory_id]
            yield dataset.add(sample)

    uses_dedup = any(s.name == "dedup" for s in config.steps)
    with open(keys_file, "wb") as keys_out:
        dedup = _seeded_dedup(_read_keys(task.preseen_file), keys_out)
        try:
            with _patched(shard, counts, dedup):
                samples = observed(pipe.plain_samples(sub, counters=counters, reports=reports))
                result.output = pipe._write_output(samples, output)
        except DataError as err:
            result.error = ShardError(message=err.message, path=err.path, line=err.line,
                                      sample_id=err.sample_id, field=err.field)
    result.steps = [c.stats() for c in counters]
    result.ingest = reports[0] if reports else IngestReport()
    result.dataset = dataset.stats()
    result.keys_file = str(keys_file) if uses_dedup else None
    result.lines, result.records = counts["lines"], counts["records"]
    result.first = first[0] if first else None
    result.last_trajectory = last[0] if last else None
    if shard.whole:
        result.records = result.ingest.trajectories  # unused for whole files: no offset follows them
    return result


# -- running and merging ----------------------------------------------------------------------------

Runner = Callable[[list[ShardTask]], list[ShardResult]]


def _pool_runner(processes: int, start_method: StartMethod) -> Runner:
    def run(tasks: list[ShardTask]) -> list[ShardResult]:
        if not tasks:
            return []
        ctx = multiprocessing.get_context(start_method)
        with ProcessPoolExecutor(max_workers=min(processes, len(tasks)), mp_context=ctx) as pool:
            return list(pool.map(run_shard, tasks))
    return run


def _inline_runner(tasks: list[ShardTask]) -> list[ShardResult]:
    return [run_shard(t) for t in tasks]


def run_parallel(config: PipelineConfig, processes: int, *, shards_per_process: int = 4,
                 min_shard_bytes: int = 1 << 20, start_method: StartMethod = "spawn",
                 console: Console | None = None, quiet: bool = False) -> PipelineReport:
    """Run the pipeline over ``processes`` worker processes; output identical to :func:`run_pipeline`.

    Args:
        config: The pipeline config, as for ``run_pipeline``.
        processes: Worker processes (1 still runs the shards in one worker, in order).
        shards_per_process: Shards planned per worker, so a slow shard does not idle the others.
        min_shard_bytes: Smallest shard worth a task.
        start_method: ``spawn`` (portable, safe with threads) or ``forkserver``.
        console: Where the per-step table goes (stderr by default).
        quiet: Print nothing.
    """
    if processes < 1:
        raise ValueError("processes must be at least 1")
    runner = _pool_runner(processes, start_method)
    return execute(config, runner, shards=processes * shards_per_process, min_shard_bytes=min_shard_bytes,
                   console=console, quiet=quiet)


def execute(config: PipelineConfig, runner: Runner, *, shards: int, min_shard_bytes: int = 1 << 20,
            console: Console | None = None, quiet: bool = False) -> PipelineReport:
    """Plan, run the shards with ``runner`` (processes, Ray, inline), re-run what must be, merge.

    Shared by :func:`run_parallel` and ``scale_ray.run_ray`` so both merge the same way.
    """
    start = time.monotonic()
    if sum(s.name == "dedup" for s in config.steps) > 1:
        raise DataError("scale-out supports one 'dedup' step (run the config with run_pipeline)",
                        field="steps")
    out = config.output.path
    out.parent.mkdir(parents=True, exist_ok=True)
    concat = config.output.format in JSONL_FORMATS
    plan = plan_shards(config, shards, min_shard_bytes=min_shard_bytes)
    config_json = config.model_dump_json()
    scratch = tempfile.mkdtemp(prefix=f".{out.name}.shards.", dir=out.parent)
    try:
        tasks = [ShardTask(config_json=config_json, shard=s, out_dir=scratch,
                           output_format=config.output.format if concat else "samples") for s in plan]
        results = runner(tasks)
        results = _settle(tasks, results, runner, scratch)
        failed = next((r for r in results if r.error is not None), None)
        if failed is not None:
            raise _located(failed, plan, results)
        _shift_lines(plan, results)
        output = _write_merged(config, results, concat)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report = _merged_report(config, plan, results, output, time.monotonic() - start)
    stats_path = (out if out.is_dir() else out.parent) / "stats.json"
    atomic_write_text(stats_path, report.model_dump_json(indent=2) + "\n")
    stats_path.chmod(0o644)
    if not quiet:
        (console or Console(stderr=True)).print(pipe.steps_table(report.steps))
    return report


def _settle(tasks: list[ShardTask], results: list[ShardResult], runner: Runner,
            scratch: str) -> list[ShardResult]:
    """Re-run shards whose assumed state (record index, dedup keys of earlier shards) was wrong.

    Only shards up to the first failing one matter: the sequential run stops there.
    """
    results = sorted(results, key=lambda r: r.index)
    first_error = next((r.index for r in results if r.error is not None), len(results))
    redo: dict[int, ShardTask] = {}
    records_before: dict[int, int] = {}
    seen: set[bytes] = set()
    for task, result in zip(tasks, results, strict=True):
        if result.index > first_error:
            break
        shard = task.shard
        offset = records_before.get(shard.input_index, 0)
        records_before[shard.input_index] = offset + result.records
        fixed = task
        if shard.format in INDEXED_FORMATS and not shard.whole and shard.index_offset != offset:
            fixed = fixed.model_copy(update={"shard": shard.model_copy(update={"index_offset": offset}),
                                             "attempt": 1})
        keys = _read_keys(result.keys_file)
        cross = keys & seen
        seen |= keys
        if cross:
            preseen = Path(scratch) / f"preseen-{shard.index:06d}.keys"
            preseen.write_bytes(b"".join(sorted(cross)))
            fixed = fixed.model_copy(update={"preseen_file": str(preseen), "attempt": 1})
        if fixed is not task:
            redo[result.index] = fixed
    if not redo:
        return results
    for again in runner(list(redo.values())):
        results[again.index] = again
    return results


def _line_offsets(plan: list[Shard], results: list[ShardResult]) -> list[int]:
    offsets: list[int] = []
    before: dict[int, int] = {}
    for shard, result in zip(plan, results, strict=False):
        offsets.append(0 if shard.whole else before.get(shard.input_index, 0))
        before[shard.input_index] = before.get(shard.input_index, 0) + result.lines
    return offsets


def _located(failed: ShardResult, plan: list[Shard], results: list[ShardResult]) -> DataError:
    assert failed.error is not None
    err = failed.error
    line = err.line
    if line is not None and not plan[failed.index].whole and err.path == plan[failed.index].path:
        line += _line_offsets(plan, results)[failed.index]
    return DataError(err.message, path=err.path, line=line, sample_id=err.sample_id, field=err.field)


def _shift_lines(plan: list[Shard], results: list[ShardResult]) -> None:
    for shard, result, offset in zip(plan, results, _line_offsets(plan, results), strict=True):
        if offset:
            result.ingest.issues = [i.model_copy(update={"line": i.line + offset})
                                    if i.line is not None and i.file == shard.path else i
                                    for i in result.ingest.issues]


def _write_merged(config: PipelineConfig, results: list[ShardResult], concat: bool) -> dict[str, Any]:
    """Concatenate shard files into the output (temp file + rename), or export the shards' samples."""
    spec = config.output
    if not concat:
        samples = (TrainSample.model_validate_json(line) for r in results for line in _lines(r.out_file))
        return pipe._write_output(samples, spec)
    out = spec.path
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            for r in results:
                with open(r.out_file, "rb") as part:
                    shutil.copyfileobj(part, handle, 1 << 20)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    outputs = [r.output for r in results]
    merged: dict[str, Any] = dict(outputs[0]) if outputs else {"format": spec.format}
    merged["out"] = str(out)
    for key in ("samples", "rows", "masked_dropped", "masked_kept"):
        if key in merged:
            merged[key] = sum(int(o.get(key, 0)) for o in outputs)
    if "files" in merged:
        merged["files"] = [str(out)]
        if spec.format == "llama-factory":  # the side file, as export writes it for the real output
            from agentworld.data import export as ex
            from agentworld.data import export_formats as ef

            style = spec.options.get("style", "sharegpt")
            name = str(spec.options.get("dataset_name") or out.stem)
            info = ef.llama_factory_dataset_info(out.name, style)
            merged["files"].append(str(ex._merge_dataset_info(out.parent / "dataset_info.json", name, info)))
    return merged


def _lines(path: str) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        yield from (line for line in handle if line.strip())


def _merge_counts(target: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        target[key] = target.get(key, 0) + value


def _merge_hist(a: Histogram, b: Histogram) -> Histogram:
    return Histogram(edges=a.edges, counts=[x + y for x, y in zip(a.counts, b.counts, strict=True)],
                     total=a.total + b.total, max=max(a.max, b.max))


def _merged_dataset(results: list[ShardResult]) -> DatasetStats:
    total = DatasetStats()
    last: str | None = None
    for r in results:
        d = r.dataset
        total.samples += d.samples
        total.trajectories += d.trajectories
        # DatasetStats counts a new trajectory when the id changes or turn 1 starts; a shard's first
        # sample was counted as new, which the sequential run does not when it continues ``last``.
        if r.first is not None and r.first[0] == last and r.first[1] != 1:
            total.trajectories -= 1
        for name in ("domains", "categories", "kept", "splits"):
            _merge_counts(getattr(total, name), getattr(d, name))
        total.action_tokens = _merge_hist(total.action_tokens, d.action_tokens)
        total.observation_tokens = _merge_hist(total.observation_tokens, d.observation_tokens)
        if r.last_trajectory is not None:
            last = r.last_trajectory
    return total


def _merged_report(config: PipelineConfig, plan: list[Shard], results: list[ShardResult],
                   output: dict[str, Any], elapsed: float) -> PipelineReport:
    reports: list[IngestReport] = []
    for i, spec in enumerate(config.inputs):
        parts = [r.ingest for s, r in zip(plan, results, strict=True) if s.input_index == i]
        issues: list[IngestIssue] = [issue for p in parts for issue in p.issues][:MAX_LISTED_ISSUES]
        reports.append(IngestReport(files=[str(spec.path)], trajectories=sum(p.trajectories for p in parts),
                                    skipped=sum(p.skipped for p in parts), issues=issues))
    names = [s.name for s in config.steps]
    steps_out: list[StepStats] = []
    for k, name in enumerate(names):
        inputs = outputs = dropped = 0
        details: dict[str, Any] = {}
        for r in results:
            st = r.steps[k]
            inputs, outputs, dropped = inputs + st.inputs, outputs + st.outputs, dropped + st.dropped
            _merge_counts(details, st.details)
        steps_out.append(StepStats(step=name, inputs=inputs, outputs=outputs, dropped=dropped,
                                   details=details))
    ingested = sum(r.trajectories for r in reports)
    skipped = sum(r.skipped for r in reports)
    steps = [StepStats(step="ingest", inputs=ingested + skipped, outputs=ingested, dropped=skipped),
             *steps_out]
    return PipelineReport(steps=steps, ingest=reports, dataset=_merged_dataset(results), output=output,
                          elapsed_s=round(elapsed, 3))


__all__ = ["Shard", "ShardResult", "ShardTask", "dedup_key", "execute", "plan_shards", "run_parallel",
           "run_shard"]

"""Merging the scale-out's shards: re-runs where an assumption was wrong, lines, outputs, statistics.

See :mod:`agentworld.data.scale` for why the merged result equals the sequential run's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from agentworld.data import pipeline as pipe
from agentworld.data.ingest import MAX_LISTED_ISSUES, IngestIssue, IngestReport
from agentworld.data.pipeline import PipelineConfig, PipelineReport
from agentworld.data.process import DatasetStats, Histogram
from agentworld.data.scale_plan import INDEXED_FORMATS, Shard
from agentworld.data.scale_worker import ShardResult, ShardTask, read_keys
from agentworld.data.sides import SideGuard, eval_path_for
from agentworld.data.types import StepStats, TrainSample
from agentworld.errors import DataError
from agentworld.io import AtomicFile

Runner = Callable[[list[ShardTask]], list[ShardResult]]
"""Runs shard tasks (in processes, on Ray, inline) and returns their results."""


def settle(tasks: list[ShardTask], results: list[ShardResult], runner: Runner,
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
        keys = read_keys(result.keys_file)
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


def locate_error(failed: ShardResult, plan: list[Shard], results: list[ShardResult]) -> DataError:
    assert failed.error is not None
    err = failed.error
    line = err.line
    if line is not None and not plan[failed.index].whole and err.path == plan[failed.index].path:
        line += _line_offsets(plan, results)[failed.index]
    return DataError(err.message, path=err.path, line=line, sample_id=err.sample_id, field=err.field)


def shift_lines(plan: list[Shard], results: list[ShardResult]) -> None:
    for shard, result, offset in zip(plan, results, _line_offsets(plan, results), strict=True):
        if offset:
            result.ingest.issues = [i.model_copy(update={"line": i.line + offset})
                                    if i.line is not None and i.file == shard.path else i
                                    for i in result.ingest.issues]


def check_sides(results: list[ShardResult]) -> None:
    """Refuse a trajectory on both sides across shards, as the sequential export does within one.

    The shards' first samples per (trajectory, side) are walked in shard order, so the sample named
    is the one the sequential run stops at.
    """
    guard = SideGuard()
    for r in results:
        if r.error is not None:
            return  # the sequential run stops at this shard's own error
        for line in _lines(r.sides_file) if r.sides_file else ():
            trajectory_id, side, sample_id = orjson.loads(line)
            guard.add(trajectory_id, side, sample_id)


def write_merged(config: PipelineConfig, results: list[ShardResult], concat: bool) -> dict[str, Any]:
    """Concatenate shard files into the output's two sides (temp files + rename), or export the shards'
    samples (train files, then eval files: each side keeps its order)."""
    spec = config.output
    if not concat:
        files = [r.out_file for r in results] + [str(eval_path_for(Path(r.out_file))) for r in results]
        samples = (TrainSample.model_validate_json(line) for f in files for line in _lines(f))
        return pipe._write_output(samples, spec)
    out = spec.path
    held = spec.eval_path or eval_path_for(out)
    for target, parts in ((out, [r.output["out"] for r in results]),
                          (held, [r.output["eval_out"] for r in results])):
        with AtomicFile(target) as handle:
            for part in parts:
                with open(part, "rb") as chunks:
                    while chunk := chunks.read(1 << 20):
                        handle.write(chunk)
    outputs = [r.output for r in results]
    merged: dict[str, Any] = dict(outputs[0]) if outputs else {"format": spec.format}
    merged.update(out=str(out), eval_out=str(held))
    for key in ("samples", "eval_samples", "rows", "eval_rows", "masked_dropped", "masked_kept"):
        merged[key] = sum(int(o.get(key, 0)) for o in outputs)
    merged["files"] = [str(out), str(held)]
    if spec.format == "llama-factory":  # the side file, as export writes it for the real output
        from agentworld.data.export import write_llama_factory_info

        merged["files"].append(str(write_llama_factory_info(out, held, spec.options.get("style", "sharegpt"),
                                                            spec.options.get("dataset_name"))))
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


def merged_report(config: PipelineConfig, plan: list[Shard], results: list[ShardResult],
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

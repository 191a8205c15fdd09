"""Scale-out of the data pipeline: the same chain over byte-range shards, in processes or on Ray.

:func:`run_parallel` cuts every JSONL input into byte ranges, runs the configured chain
(:func:`agentworld.data.pipeline.iter_samples` and the same export) on each range in a worker
process, and concatenates the per-shard outputs in input order. The result — the output file and
every count of ``stats.json`` except ``elapsed_s`` — is identical to :func:`run_pipeline`'s.
:func:`agentworld.data.scale_ray.run_ray` runs the same shards as Ray tasks.
The worker (:mod:`agentworld.data.scale_worker`) passes the shard's record source and its seeded
``dedup`` into :func:`agentworld.data.pipeline.plain_samples`; no module attribute is patched, so
shards may also run side by side in threads. Planning is :mod:`agentworld.data.scale_plan`, the
merge :mod:`agentworld.data.scale_merge`.

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
``agentworld-bench``) are concatenated, each side into its own file; ``hf-datasets`` (a folder) is
written by the parent from the workers' sample files, so only the steps run in parallel there. A
trajectory on both sides of the split is refused across shards as the sequential export refuses it
(each worker lists its trajectories' sides; ``check_sides`` walks them in shard order).
"""

from __future__ import annotations

import multiprocessing
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Literal

from rich.console import Console

from agentworld.data import pipeline as pipe
from agentworld.data.pipeline import PipelineConfig, PipelineReport
from agentworld.data.scale_merge import (
    Runner,
    check_sides,
    locate_error,
    merged_report,
    settle,
    shift_lines,
    write_merged,
)
from agentworld.data.scale_plan import Shard, plan_shards
from agentworld.data.scale_worker import ShardResult, ShardTask, dedup_key, run_shard
from agentworld.errors import DataError
from agentworld.io import atomic_write_text

StartMethod = Literal["spawn", "forkserver"]
JSONL_FORMATS = frozenset({"samples", "trl", "ms-swift", "llama-factory", "agentworld-bench"})
"""Output formats whose shard files concatenate into the whole output."""


def _pool_runner(processes: int, start_method: StartMethod) -> Runner:
    def run(tasks: list[ShardTask]) -> list[ShardResult]:
        if not tasks:
            return []
        ctx = multiprocessing.get_context(start_method)
        with ProcessPoolExecutor(max_workers=min(processes, len(tasks)), mp_context=ctx) as pool:
            return list(pool.map(run_shard, tasks))
    return run


def inline_runner(tasks: list[ShardTask]) -> list[ShardResult]:
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
        results = settle(tasks, results, runner, scratch)
        check_sides(results)
        failed = next((r for r in results if r.error is not None), None)
        if failed is not None:
            raise locate_error(failed, plan, results)
        shift_lines(plan, results)
        output = write_merged(config, results, concat)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report = merged_report(config, plan, results, output, time.monotonic() - start)
    stats_path = (out if out.is_dir() else out.parent) / "stats.json"
    atomic_write_text(stats_path, report.model_dump_json(indent=2) + "\n")
    stats_path.chmod(0o644)
    if not quiet:
        (console or Console(stderr=True)).print(pipe.steps_table(report.steps))
    return report


__all__ = ["Runner", "Shard", "ShardResult", "ShardTask", "dedup_key", "execute", "inline_runner",
           "plan_shards", "run_parallel", "run_shard"]

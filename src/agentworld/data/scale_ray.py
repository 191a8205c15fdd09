"""The data pipeline on a Ray cluster (optional: ``pip install "ray[data]"``).

The shards are the ones :func:`agentworld.data.scale.plan_shards` cuts (byte ranges aligned on
trajectory boundaries); Ray Data runs :func:`agentworld.data.scale.run_shard` on each with
``flat_map``, and the merge (dedup re-runs, concatenation in input order, summed statistics) is
:func:`agentworld.data.scale.execute`'s, so the output is identical to ``run_pipeline``'s.

Why not ``ray.data.read_text`` over the lines: Ray cuts files into blocks without regard to
trajectories (AgentWorldBench rows of one trajectory could land in two blocks, and the converter
would then emit two half trajectories), and the block order is not the merge order of our
per-shard outputs. Shipping the *ranges* instead keeps the data off the object store: each task
reads its range straight from the file. Hence the inputs and the output folder must be on storage
every node sees (a shared file system); on one machine that is trivially so.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from agentworld.data.pipeline import PipelineConfig, PipelineReport
from agentworld.data.scale import ShardResult, ShardTask, execute, run_shard


def _run_row(row: dict[str, Any]) -> list[dict[str, Any]]:
    """Ray Data ``flat_map`` function: one shard task in, one result row out (JSON text)."""
    task = ShardTask.model_validate_json(row["task"])
    return [{"index": task.shard.index, "result": run_shard(task).model_dump_json()}]


def run_ray(config: PipelineConfig, address: str | None = None, *, shards_per_cpu: int = 4,
            min_shard_bytes: int = 1 << 20, console: Console | None = None,
            quiet: bool = False) -> PipelineReport:
    """Run the pipeline as Ray Data tasks; output identical to :func:`~agentworld.data.pipeline.run_pipeline`.

    Args:
        config: The pipeline config. Input and output paths must be visible to every Ray node.
        address: A cluster to join (``"auto"``, ``"ray://host:10001"``); None starts or reuses a
            local instance. An already initialised Ray is used as it is.
        shards_per_cpu: Shards planned per cluster CPU, for balance.
        min_shard_bytes: Smallest shard worth a task.
        console: Where the per-step table goes (stderr by default).
        quiet: Print nothing.
    """
    try:
        import ray
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError('run_ray needs Ray: pip install "ray[data]"') from None
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, ignore_reinit_error=True)
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))

    def runner(tasks: list[ShardTask]) -> list[ShardResult]:
        if not tasks:
            return []
        items = [{"index": t.shard.index, "task": t.model_dump_json()} for t in tasks]
        ds = ray.data.from_items(items, override_num_blocks=len(items)).flat_map(_run_row)
        rows = ds.take_all()
        return sorted((ShardResult.model_validate_json(r["result"]) for r in rows), key=lambda r: r.index)

    return execute(config, runner, shards=cpus * shards_per_cpu, min_shard_bytes=min_shard_bytes,
                   console=console, quiet=quiet)


__all__ = ["run_ray"]

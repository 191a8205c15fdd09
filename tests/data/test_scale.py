"""Scale-out (agentworld.data.scale): sharded runs give the sequential run's output, byte for byte.

Most cases run the shards inline (same planning, worker and merge code, no process start-up);
one case per path uses real worker processes, and one a local Ray instance (skipped without Ray).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from agentworld.corpus import corpus_path
from agentworld.data import process as proc
from agentworld.data import scale
from agentworld.data.ingest import ingest
from agentworld.data.pipeline import PipelineConfig, PipelineReport, run_pipeline
from agentworld.data.scale_worker import seeded_dedup
from agentworld.errors import DataError

SMALL = 1 << 14  # shard size floor for tests: the corpus (2.5 MB) becomes many shards


def _config(inputs: list[dict[str, Any]], out: Path, fmt: str = "samples", **extra: Any) -> PipelineConfig:
    return PipelineConfig.model_validate({"inputs": inputs, "output": {"format": fmt, "path": out}, **extra})


def _comparable(report: PipelineReport) -> dict[str, Any]:
    data = report.model_dump(mode="json", exclude={"elapsed_s"})
    data["output"] = {k: v for k, v in data["output"].items() if k not in ("out", "eval_out", "files")}
    return data


def _both(tmp_path: Path, inputs: list[dict[str, Any]], fmt: str = "samples", *, processes: int = 0,
          **extra: Any) -> tuple[bytes, bytes, PipelineReport, PipelineReport]:
    """Run sequentially and sharded (inline when ``processes`` is 0); return both outputs and reports.

    An output is the train side's bytes, a separator, and the eval side's.
    """
    seq = _config(inputs, tmp_path / "seq" / "out.jsonl", fmt, **extra)
    par = _config(inputs, tmp_path / "par" / "out.jsonl", fmt, **extra)
    a = run_pipeline(seq, progress=False)
    if processes:
        b = scale.run_parallel(par, processes, min_shard_bytes=SMALL, quiet=True)
    else:
        b = scale.execute(par, scale.inline_runner, shards=16, min_shard_bytes=SMALL, quiet=True)
    return _sides(seq), _sides(par), a, b


def _sides(config: PipelineConfig) -> bytes:
    out = config.output.path
    return out.read_bytes() + b"\n--- eval ---\n" + (out.parent / "out_eval.jsonl").read_bytes()


def _rows(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _write_rows(path: Path, rows: list[Any], raw_lines: dict[int, bytes] | None = None) -> Path:
    lines = [orjson.dumps(r) for r in rows]
    for at, raw in sorted((raw_lines or {}).items(), reverse=True):
        lines.insert(at, raw)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_real_corpus_processes_identical(tmp_path: Path) -> None:
    """Two worker processes, bench export: same bytes and same stats as the single-process run."""
    out_a, out_b, a, b = _both(tmp_path, [{"path": str(corpus_path("terminal"))}], "agentworld-bench",
                               processes=2)
    assert out_a == out_b
    # the bench export round-trips the corpus: one source, so on one side of the default split — which
    # side depends on the source's path, i.e. on where the repository is checked out
    corpus = corpus_path("terminal").read_bytes()
    on_eval = proc.stable_unit(0, str(corpus_path("terminal"))) < 0.1
    assert out_a == (b"\n--- eval ---\n" + corpus if on_eval else corpus + b"\n--- eval ---\n")
    assert _comparable(a) == _comparable(b)
    stats = [orjson.loads((tmp_path / side / "stats.json").read_bytes()) for side in ("seq", "par")]
    assert stats[0]["dataset"] == stats[1]["dataset"]


@pytest.mark.parametrize("fmt", ["samples", "trl", "ms-swift", "llama-factory"])
def test_real_corpus_formats_identical(tmp_path: Path, fmt: str) -> None:
    out_a, out_b, a, b = _both(tmp_path, [{"path": str(corpus_path("terminal"))}], fmt)
    assert out_a == out_b and out_a
    assert _comparable(a) == _comparable(b)
    if fmt == "llama-factory":
        assert (tmp_path / "par" / "dataset_info.json").read_bytes() == \
            (tmp_path / "seq" / "dataset_info.json").read_bytes()


def test_multi_file_with_duplicates_bad_lines_and_idless_records(tmp_path: Path) -> None:
    """Three inputs in two formats: cross-file duplicates, skipped bad lines, index-named records."""
    rows = _rows(corpus_path("terminal"))
    first = _write_rows(tmp_path / "a.jsonl", rows[:200], {5: b"", 60: b"{not json", 150: b"   "})
    second = _write_rows(tmp_path / "b.jsonl", rows[150:])  # rows 150..199 repeat: dedup across shards
    generic = []
    for i in range(400):  # id-less: ids come from the record index, so offsets must be exact
        turns = [{"action": f"echo {i % 37} {j}", "observation": f"out {i % 37} {j}\n" * (i % 5 + 1)}
                 for j in range(3)]
        generic.append({"system": "You are a shell.", "turns": turns})
    third = _write_rows(tmp_path / "c.jsonl", generic, {100: b"[broken", 300: b""})
    inputs = [{"path": str(first), "on_error": "skip"}, {"path": str(second)},
              {"path": str(third), "format": "generic", "on_error": "skip"}]
    out_a, out_b, a, b = _both(tmp_path, inputs, processes=2)
    assert out_a == out_b
    assert _comparable(a) == _comparable(b)
    dedup = next(s for s in b.steps if s.step == "dedup")
    assert dedup.dropped > 0
    assert [i.line for r in b.ingest for i in r.issues] == [62, 101]


def test_shard_cuts_fall_between_trajectories(tmp_path: Path) -> None:
    """Every cut sits where the previous row's trajectory ends and a different one begins."""
    path = corpus_path("terminal")
    config = _config([{"path": str(path)}], tmp_path / "out.jsonl")
    plan = scale.plan_shards(config, 40, min_shard_bytes=1)
    assert len(plan) > 20
    data = path.read_bytes()
    assert [s.start for s in plan[1:]] == [s.end for s in plan[:-1]]
    assert plan[0].start == 0 and plan[-1].end == len(data)
    for shard in plan[1:]:
        before = orjson.loads(data[:shard.start].splitlines()[-1])
        after = orjson.loads(data[shard.start:].split(b"\n", 1)[0])
        assert before["id"].rpartition("-t")[0] != after["id"].rpartition("-t")[0]
        assert after["turn_idx"] == 1


def test_long_trajectory_is_never_split(tmp_path: Path) -> None:
    """A cut aimed inside one long trajectory moves to its end: the trajectory stays whole."""
    rows = _rows(corpus_path("terminal"))
    by_traj: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_traj.setdefault(row["id"].rpartition("-t")[0], []).append(row)
    longest = max(by_traj.values(), key=len)
    path = _write_rows(tmp_path / "in.jsonl", [rows[0], *longest, rows[-1]])
    config = _config([{"path": str(path)}], tmp_path / "out.jsonl")
    plan = scale.plan_shards(config, 8, min_shard_bytes=1)
    size = path.stat().st_size
    assert [s.start for s in plan] == [0, size - len(orjson.dumps(rows[-1])) - 1]  # aimed at 1/8..7/8
    out_a, out_b, _, _ = _both(tmp_path, [{"path": str(path)}], "agentworld-bench")
    assert out_a == out_b


def test_error_is_located_as_in_the_sequential_run(tmp_path: Path) -> None:
    rows = _rows(corpus_path("terminal"))
    path = _write_rows(tmp_path / "bad.jsonl", rows, {300: b"{oops"})
    inputs = [{"path": str(path)}]
    with pytest.raises(DataError, match=":301") as seq:
        run_pipeline(_config(inputs, tmp_path / "seq" / "out.jsonl"), progress=False)
    par = _config(inputs, tmp_path / "par" / "out.jsonl")
    with pytest.raises(DataError, match=":301") as sharded:
        scale.execute(par, scale.inline_runner, shards=16, min_shard_bytes=SMALL, quiet=True)
    assert str(sharded.value) == str(seq.value)
    assert sharded.value.line == 301
    assert not par.output.path.exists()


def test_dedup_key_matches_the_pipeline_dedup() -> None:
    """The seeded dedup in workers must drop exactly what process.dedup drops."""
    samples = list(proc.expand(ingest(corpus_path("terminal"))))[:60]
    doubled = samples + samples[10:30]
    kept = list(proc.dedup(doubled))
    with open("/dev/null", "wb") as sink:
        ours = list(seeded_dedup(set(), sink)(doubled))
    assert [s.id for s in ours] == [s.id for s in kept]
    assert len({scale.dedup_key(s) for s in doubled}) == len(kept) == len(samples)


def test_hf_datasets_falls_back_to_parent_export(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    rows = _rows(corpus_path("terminal"))[:80]
    path = _write_rows(tmp_path / "in.jsonl", rows)
    split = {"split": {"eval_fraction": 0.3, "key": "trajectory_id"}}
    seq = _config([{"path": str(path)}], tmp_path / "seq" / "ds", "hf-datasets", **split)
    par = _config([{"path": str(path)}], tmp_path / "par" / "ds", "hf-datasets", **split)
    a = run_pipeline(seq, progress=False)
    b = scale.execute(par, scale.inline_runner, shards=4, min_shard_bytes=1, quiet=True)
    assert _comparable(a) == _comparable(b)
    from datasets import load_from_disk

    seq_ds, par_ds = load_from_disk(str(seq.output.path)), load_from_disk(str(par.output.path))
    assert a.output["rows"] and a.output["eval_rows"] and set(seq_ds) == {"train", "test"}
    assert all(seq_ds[k].to_list() == par_ds[k].to_list() for k in ("train", "test"))


@pytest.mark.extra("ray")
def test_ray_local_instance_identical(tmp_path: Path) -> None:
    import ray

    from agentworld.data.scale_ray import run_ray

    rows = _rows(corpus_path("terminal"))
    first = _write_rows(tmp_path / "a.jsonl", rows[:200])
    second = _write_rows(tmp_path / "b.jsonl", rows[150:])
    inputs = [{"path": str(first)}, {"path": str(second)}]
    seq = _config(inputs, tmp_path / "seq" / "out.jsonl", "agentworld-bench")
    par = _config(inputs, tmp_path / "par" / "out.jsonl", "agentworld-bench")
    a = run_pipeline(seq, progress=False)
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True)
    try:
        b = run_ray(par, min_shard_bytes=SMALL, quiet=True)
    finally:
        ray.shutdown()
    assert par.output.path.read_bytes() == seq.output.path.read_bytes()
    assert _comparable(a) == _comparable(b)


def _thread_runner(tasks: list[scale.ShardTask]) -> list[scale.ShardResult]:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(scale.run_shard, tasks))


def test_shards_in_threads_give_the_sequential_output(tmp_path: Path) -> None:
    """Shards get their record source and dedup passed in, so several may run in one process."""
    rows = _rows(corpus_path("terminal"))
    path = _write_rows(tmp_path / "in.jsonl", rows + rows[:40])  # duplicates across shards too
    seq = _config([{"path": str(path)}], tmp_path / "seq" / "out.jsonl")
    par = _config([{"path": str(path)}], tmp_path / "par" / "out.jsonl")
    a = run_pipeline(seq, progress=False)
    b = scale.execute(par, _thread_runner, shards=16, min_shard_bytes=SMALL, quiet=True)
    assert par.output.path.read_bytes() == seq.output.path.read_bytes()
    assert _comparable(a) == _comparable(b)


def test_a_shard_runs_the_pipeline_without_patching_it(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from agentworld.data import ingest as ingest_mod
    from agentworld.data import pipeline as pipe

    original_records, original_dedup = ingest_mod.located_records, pipe.SAMPLE_STEPS["dedup"]
    write = pipe._write_output
    seen: list[bool] = []

    def watching(samples: Any, spec: Any) -> Any:
        def each() -> Any:
            for sample in samples:
                seen.append(ingest_mod.located_records is original_records
                            and pipe.SAMPLE_STEPS["dedup"] is original_dedup)
                yield sample
        return write(each(), spec)

    monkeypatch.setattr(pipe, "_write_output", watching)
    par = _config([{"path": str(corpus_path("terminal"))}], tmp_path / "par" / "out.jsonl")
    scale.execute(par, scale.inline_runner, shards=4, min_shard_bytes=SMALL, quiet=True)
    assert seen and all(seen)


def test_split_sides_identical_across_shards(tmp_path: Path) -> None:
    split = {"split": {"eval_fraction": 0.3, "key": "trajectory_id"}}
    out_a, out_b, a, b = _both(tmp_path, [{"path": str(corpus_path("terminal"))}], "trl", **split)
    assert out_a == out_b and a.output["rows"] and a.output["eval_rows"]
    assert _comparable(a) == _comparable(b)


def test_trajectory_on_both_sides_across_shards_is_refused_as_in_one_process(tmp_path: Path) -> None:
    """One trajectory id in two files (two shards) whose tasks fall on different sides of the split."""
    def record(task: str) -> dict[str, Any]:
        return {"id": "dup", "task": task, "system": "s", "turns": [{"action": "ls", "observation": task}]}

    # with seed 0, task z falls on the eval side and task y on the train side
    files = [_write_rows(tmp_path / f"{task}.jsonl", [record(task)]) for task in ("z", "y")]
    inputs = [{"path": str(f), "format": "generic"} for f in files]
    split = {"split": {"eval_fraction": 0.5, "key": "task"}}
    errors = []
    for run in (lambda c: run_pipeline(c, progress=False),
                lambda c: scale.execute(c, scale.inline_runner, shards=4, min_shard_bytes=1, quiet=True)):
        with pytest.raises(DataError, match="'dup' has samples on both sides") as err:
            run(_config(inputs, tmp_path / "out" / "train.jsonl", "trl", **split))
        errors.append((err.value.message, err.value.sample_id))
    assert errors[0] == errors[1] and errors[0][1] == "dup-t1"
    assert not (tmp_path / "out" / "train.jsonl").exists()

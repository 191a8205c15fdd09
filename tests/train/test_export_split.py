"""Exports keep the split: ``data process`` on the data guide's pipeline config, every format read back the
way its consumer reads it, and no trajectory on both sides.

Each consumer's loader: TRL and ms-swift rows through ``datasets.load_dataset("json", ...)`` (what
TRL's scripts and ms-swift's ``--dataset``/``--val_dataset`` do with a JSONL path), LLaMA-Factory
through its ``dataset_info.json`` the way its ``get_dataset_list`` and ``SharegptDatasetConverter``
read it (``dataset``/``eval_dataset`` names, ``file_name`` under ``dataset_dir``, ``columns``,
``tags``), ``hf-datasets`` through ``load_from_disk``, AgentWorldBench rows through
:func:`agentworld.schema.load_samples`. Rows carry no trajectory id, so each row is traced back to
its sample by content (the pipeline's dedup makes that unique) in the ``samples`` export.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.schema import load_samples

datasets = pytest.importorskip("datasets")

EXAMPLE = Path(__file__).parents[2] / "examples" / "data" / "pipeline.yaml"
Key = tuple[str, tuple[tuple[str, str], ...], str, str]
"""A sample by content: system, history, action, observation."""


def _config(tmp_path: Path, fmt: str) -> Path:
    """The data guide's config, its output moved into ``tmp_path``, with a split that gives both sides.

    Inputs that are not here (the tau-bench logs live outside the repository) are left out.
    """
    body = yaml.safe_load(EXAMPLE.read_text())
    inputs = [{**i, "path": str((EXAMPLE.parent / i["path"]).resolve())} for i in body["inputs"]]
    body["inputs"] = [i for i in inputs if Path(i["path"]).exists()]
    body["split"] = {"eval_fraction": 0.3, "key": "trajectory_id"}
    name = "ds" if fmt == "hf-datasets" else "train.jsonl"
    body["output"] = {"format": fmt, "path": str(tmp_path / fmt / name)}
    path = tmp_path / f"{fmt}.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


def _process(tmp_path: Path, fmt: str) -> tuple[dict[str, Any], str]:
    config = _config(tmp_path, fmt)
    result = CliRunner().invoke(app, ["data", "process", "--config", str(config), "--no-progress"])
    assert result.exit_code == 0, result.output
    folder = tmp_path / fmt / ("ds" if fmt == "hf-datasets" else "")
    return json.loads((folder / "stats.json").read_text()), result.output


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], dict[Key, dict[str, Any]]]:
    """The ``samples`` export: its folder, its stats, and every sample by content."""
    tmp = tmp_path_factory.mktemp("split")
    stats, _ = _process(tmp, "samples")
    by_key: dict[Key, dict[str, Any]] = {}
    for side in ("train", "eval"):
        for line in (tmp / "samples" / f"{side}.jsonl").read_text().splitlines():
            row = json.loads(line)
            assert row["split"] == side
            key = (row["system"], tuple(map(tuple, row["history"])), row["action"], row["observation"])
            assert key not in by_key
            by_key[key] = row
    return tmp, stats, by_key


def _split_counts(stats: dict[str, Any]) -> tuple[int, int]:
    details = next(s for s in stats["steps"] if s["step"] == "split")["details"]
    return details["train"], details["eval"]


def test_samples_sides_match_what_process_reports(base: Any) -> None:
    _, stats, by_key = base
    train, held = _split_counts(stats)
    assert train > 0 and held > 0
    sides: dict[str, set[str]] = {"train": set(), "eval": set()}
    for row in by_key.values():
        sides[row["split"]].add(row["trajectory_id"])
    assert not sides["train"] & sides["eval"]
    assert sum(r["split"] == "train" for r in by_key.values()) == train == stats["output"]["rows"]
    assert sum(r["split"] == "eval" for r in by_key.values()) == held == stats["output"]["eval_rows"]


def _from_messages(messages: list[dict[str, Any]], role: str = "role", content: str = "content",
                   user: str = "user", assistant: str = "assistant", system: str = "") -> Key:
    if messages and messages[0][role] == "system":
        system, messages = messages[0][content], messages[1:]
    assert [m[role] for m in messages] == [user, assistant] * (len(messages) // 2) and len(messages) % 2 == 0
    pairs = [(messages[i][content], messages[i + 1][content]) for i in range(0, len(messages), 2)]
    return system, tuple(pairs[:-1]), pairs[-1][0], pairs[-1][1]


def _trl(row: dict[str, Any]) -> Key:
    return _from_messages(row["prompt"] + row["completion"])


def _swift(row: dict[str, Any]) -> Key:
    assistants = [m for m in row["messages"] if m["role"] == "assistant"]
    assert [m["loss"] for m in assistants] == [False] * (len(assistants) - 1) + [True]
    return _from_messages(row["messages"])


def _llama_factory_sides(folder: Path, names: tuple[str, str]) -> dict[str, list[Key]]:
    """Read two ``dataset_info.json`` entries as LLaMA-Factory's parser and sharegpt converter do."""
    info = json.loads((folder / "dataset_info.json").read_text())
    out: dict[str, list[Key]] = {}
    for side, name in zip(("train", "eval"), names, strict=True):
        entry = info[name]
        assert entry["formatting"] == "sharegpt"
        columns, tags = entry["columns"], entry["tags"]
        path = os.path.join(folder, entry["file_name"])  # file_name is relative to dataset_dir
        rows = datasets.load_dataset("json", data_files=path, split="train")
        out[side] = [_from_messages(r[columns["messages"]], tags["role_tag"], tags["content_tag"],
                                    tags["user_tag"], tags["assistant_tag"], r[columns["system"]])
                     for r in rows]
    return out


def _bench(s: Any) -> Key:
    n = s.turn_idx - 1
    return s.system_str, tuple(zip(s.prompt[:n], s.response[:n], strict=True)), s.prompt[n], s.response[n]


def _read_sides(tmp: Path, fmt: str) -> dict[str, list[Key]]:
    folder = tmp / fmt
    if fmt == "llama-factory":
        return _llama_factory_sides(folder, ("train", "train_eval"))
    if fmt == "hf-datasets":
        loaded = datasets.load_from_disk(str(folder / "ds"))
        assert set(loaded) == {"train", "test"}
        return {"train": [_trl(r) for r in loaded["train"]], "eval": [_trl(r) for r in loaded["test"]]}
    if fmt == "agentworld-bench":
        return {side: [_bench(s) for s in load_samples([folder / f"{side}.jsonl"])]
                for side in ("train", "eval")}
    loaded = datasets.load_dataset("json", data_files={"train": str(folder / "train.jsonl"),
                                                       "test": str(folder / "eval.jsonl")})
    parse = _trl if fmt == "trl" else _swift
    return {"train": [parse(r) for r in loaded["train"]], "eval": [parse(r) for r in loaded["test"]]}


@pytest.mark.parametrize("fmt", ["trl", "llama-factory", "ms-swift", "hf-datasets", "agentworld-bench"])
def test_each_export_keeps_the_split_for_its_consumer(base: Any, fmt: str) -> None:
    tmp, base_stats, by_key = base
    stats, printed = _process(tmp, fmt)
    output = stats["output"]
    assert _split_counts(stats) == _split_counts(base_stats)
    sides = _read_sides(tmp, fmt)
    trajectories: dict[str, set[str]] = {}
    for side, keys in sides.items():
        rows = [by_key[k] for k in keys]  # every row is a sample of the pipeline, traced back by content
        assert {r["split"] for r in rows} <= {side}
        trajectories[side] = {r["trajectory_id"] for r in rows}
    assert trajectories["train"] and trajectories["eval"]
    assert not trajectories["train"] & trajectories["eval"]
    assert (len(sides["train"]), len(sides["eval"])) == (output["rows"], output["eval_rows"])
    assert (output["samples"], output["eval_samples"]) == (sum(_split_counts(stats)), _split_counts(stats)[1])
    if fmt == "agentworld-bench":  # evaluation rows keep every sample
        assert (output["rows"], output["eval_rows"]) == _split_counts(stats)
    else:  # training rows are the samples the mask keeps, on each side
        kept = {side: sum(r["split"] == side and r["mask"]["keep"] for r in by_key.values())
                for side in ("train", "eval")}
        assert (output["rows"], output["eval_rows"]) == (kept["train"], kept["eval"])
    counts = re.search(r"wrote (\d+) train (?:rows to \S+ and|and) (\d+) (?:eval|test) rows", printed)
    assert counts is not None and (int(counts[1]), int(counts[2])) == (output["rows"], output["eval_rows"])


def test_sft_recipe_on_the_pipeline_config_trains_on_its_train_side_only(base: Any) -> None:
    """``train sft --pipeline`` holds out exactly the samples ``data process`` wrote to the eval file."""
    from agentworld.train.config import SFTConfig
    from agentworld.train.sft import build_rows

    tmp, _, by_key = base
    config = SFTConfig(model="m", output_dir=tmp / "run", pipeline=tmp / "samples.yaml",
                       variants_per_sample=1)
    train_rows, eval_rows = build_rows(config)
    kept = {side: {r["id"] for r in by_key.values() if r["split"] == side and r["mask"]["keep"]}
            for side in ("train", "eval")}
    assert {r["sample_id"] for r in eval_rows} == kept["eval"] and kept["eval"]
    assert {r["sample_id"] for r in train_rows} == kept["train"]

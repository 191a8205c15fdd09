"""One JSON-lines reader that splits on "\\n" only: U+2028, U+2029 and U+0085 inside strings round-trip.

``str.splitlines`` also splits on those characters, which JSON writers leave raw inside strings (they
are not control characters), so a splitlines reader cannot load back what our own writers saved.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentworld.data.pipeline import write_jsonl_stream
from agentworld.domains.records_file import read_records
from agentworld.eval.cli import app as eval_app
from agentworld.inputs import jsonl_rows, read_jsonl
from agentworld.io import AsyncJournal, JsonlJournal, atomic_write_jsonl, read_journal
from agentworld.schema import BenchSample, read_bench_jsonl, write_bench_jsonl
from agentworld.synth.world import World, load_world, save_world
from synth_worlds import TASK, WORLD

ODD = "a\u2028b\u2029c\u0085d"
"""Characters ``str.splitlines`` splits on but JSON writers leave raw."""


def spiced(value: Any, keep: frozenset[str] = frozenset(), key: str | None = None) -> Any:
    """``value`` with :data:`ODD` appended to every string field (except those named in ``keep``)."""
    if isinstance(value, str):
        return value if key in keep else value + ODD
    if isinstance(value, list):
        return [spiced(x, keep, key) for x in value]
    if isinstance(value, dict):
        return {k: spiced(v, keep, k) for k, v in value.items()}
    return value


ROWS = [spiced({"id": "r1", "text": "x", "nested": {"list": ["y", {"z": "w"}]}}), spiced({"id": "r2"})]


def test_the_reader_splits_on_newline_only() -> None:
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS)
    assert len(text.splitlines()) > len(ROWS)  # what broke the old readers
    assert [row for _, row in jsonl_rows(text)] == ROWS
    assert [n for n, _ in jsonl_rows("\n" + text)] == [2, 3]


def test_every_jsonl_writer_round_trips_through_the_reader(tmp_path: Path) -> None:
    atomic_write_jsonl(tmp_path / "atomic.jsonl", ROWS)
    write_jsonl_stream(tmp_path / "stream.jsonl", ROWS)
    with JsonlJournal(tmp_path / "journal.jsonl") as journal:
        for row in ROWS:
            journal.append(row)
    with AsyncJournal(tmp_path / "async.jsonl") as async_journal:
        for row in ROWS:
            asyncio.run(async_journal.write(row))
    for name in ("atomic", "stream", "journal", "async"):
        path = tmp_path / f"{name}.jsonl"
        assert ODD in path.read_text("utf-8"), name  # written raw, not escaped
        assert [row for _, row in read_jsonl(path)] == ROWS, name
        assert list(read_journal(path)) == ROWS, name
    samples = [BenchSample(**spiced({"task": "x/mcp", "id": "s1", "prompt": ["p"], "response": ["r"],
                                     "system_str": "s"}, frozenset({"task"})))]
    write_bench_jsonl(tmp_path / "bench.jsonl", samples)
    rows = [s.to_row() for s in samples]
    assert [s.to_row() for s in read_bench_jsonl(tmp_path / "bench.jsonl")] == rows
    assert [row for _, row in read_jsonl(tmp_path / "bench.jsonl")] == rows


def test_a_saved_world_with_odd_characters_in_every_string_loads_back(tmp_path: Path) -> None:
    keep = frozenset({"op", "domain"})  # enumerations, not text
    world = World(**spiced({**WORLD, "tasks": [TASK, {**TASK, "id": "second"}]}, keep))
    loaded = load_world(save_world(world, tmp_path / "w"))
    assert loaded == world and ODD in loaded.tasks[1].instruction


@pytest.mark.parametrize(("module", "loader"), [
    ("agentworld.domains.mcp.scenarios", "load_scenarios"),
    ("agentworld.domains.search.record", "load_search_scenarios"),
    ("agentworld.domains.swe.record", "load_swe_scenarios"),
    ("agentworld.domains.web.record", "load_web_scenarios"),
])
def test_every_recorder_loads_scenarios_with_odd_characters(tmp_path: Path, module: str, loader: str) -> None:
    domain = module.split(".")[2]
    shipped = Path(importlib.import_module(f"agentworld.domains.{domain}").__file__ or "").parent
    rows = [row for _, row in read_jsonl(shipped / "scenarios" / "train.jsonl")][:3]
    keep = frozenset({"name", "server", "tool", "repo", "start", "url"})  # validated names, not text
    path = tmp_path / "scenarios.jsonl"
    atomic_write_jsonl(path, [spiced(r, keep) for r in rows])
    loaded = getattr(importlib.import_module(module), loader)(path)
    assert len(loaded) == len(rows) and repr(ODD)[1:-1] in repr(loaded)


def test_read_records_and_eval_score_judged_read_odd_characters(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    atomic_write_jsonl(path, ROWS)
    assert read_records(path, lambda item, _line: item, lambda item: item["id"]) == ROWS
    judged = [spiced({"task": "x/mcp", "id": f"j{i}", "gen": "g", "failed": 0.0, "total_score": 4.0,
                      "format": 4}, frozenset({"task"})) for i in range(2)]
    atomic_write_jsonl(tmp_path / "judged.jsonl", judged)
    result = CliRunner().invoke(eval_app, ["score", "--judged", str(tmp_path / "judged.jsonl"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["domains"]["mcp"]["n"] == 2

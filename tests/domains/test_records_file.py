"""The one reader behind every scenario and task file: located errors, unique names, JSON lists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.domains.mcp.scenarios import load_scenarios
from agentworld.domains.records_file import read_records
from agentworld.domains.search.record import load_search_scenarios
from agentworld.domains.swe.record import load_swe_scenarios
from agentworld.domains.web.record import load_web_scenarios
from agentworld.errors import DataError


def _name(item: Any, line: int | None) -> str:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        raise DataError("expected {name}", path="f", line=line, field="name")
    return str(item["name"])


def test_blank_lines_are_skipped_and_names_kept_in_order(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text('{"name": "a"}\n\n   \n{"name": "b"}\n')
    assert read_records(f, _name, str) == ["a", "b"]


@pytest.mark.parametrize(("content", "match"), [
    ('{"name": "a"}\n{"name": "a"}\n', r"s\.jsonl:2, sample 'a', field 'name': duplicate scenario name"),
    ('{"name": "a"}\n{oops\n', r"s\.jsonl:2: malformed JSON"),
    ("\n\n", r"s\.jsonl: the scenario file holds no scenarios"),
    (b"\xff\xfe{}".decode("latin-1"), r"not UTF-8 text"),
])
def test_bad_files_are_located(tmp_path: Path, content: str, match: str) -> None:
    f = tmp_path / "s.jsonl"
    f.write_bytes(content.encode("latin-1"))
    with pytest.raises(DataError, match=match):
        read_records(f, _name, str)


def test_missing_empty_allowed_size_cap_and_json_list(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"nope\.jsonl: no such task file"):
        read_records(tmp_path / "nope.jsonl", _name, str, what="task")
    empty = tmp_path / "e.jsonl"
    empty.write_text("")
    assert read_records(empty, _name, str, allow_empty=True) == []
    big = tmp_path / "big.jsonl"
    big.write_text('{"name": "a"}\n' * 100)
    with pytest.raises(DataError, match="file larger than 50 bytes"):
        read_records(big, _name, str, max_bytes=50)
    listed = tmp_path / "l.json"
    listed.write_text(json.dumps([{"name": "x"}, {"name": "y"}]))
    assert read_records(listed, _name, str, json_list=True) == ["x", "y"]
    listed.write_text('{"name": "x"}')
    with pytest.raises(DataError, match=r"expected a JSON list \(or a \.jsonl file\) of scenarios"):
        read_records(listed, _name, str, json_list=True)


@pytest.mark.parametrize("loader", [load_scenarios, load_search_scenarios, load_swe_scenarios,
                                    load_web_scenarios])
def test_every_scenario_loader_locates_a_bad_line_the_same_way(tmp_path: Path, loader: Any) -> None:
    f = tmp_path / "scen.jsonl"
    f.write_text('\n{"name": 3}\n')
    with pytest.raises(DataError, match=r"scen\.jsonl:2, field 'name'"):
        loader(f)
    f.write_text("{not json\n")
    with pytest.raises(DataError, match=r"scen\.jsonl:1: malformed JSON"):
        loader(f)
    with pytest.raises(DataError, match=r"no such scenario file"):
        loader(tmp_path / "absent.jsonl")

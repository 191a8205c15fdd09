"""AgentWorldBench rows: lossless reading/writing, split/join, message lists, located errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentworld.domains import domain_names
from agentworld.errors import DataError
from agentworld.schema import (
    BenchSample,
    Trajectory,
    Turn,
    join_samples,
    load_samples,
    parse_row,
    read_bench_jsonl,
    split_trajectory,
    write_bench_jsonl,
)

MARK = "**Environment Observation:**\n"


def _rows(n: int = 3, **extra: object) -> list[dict]:
    prompts = [f"**Action:**\n```json\n[{{\"keystrokes\": \"echo {i}\\n\", \"duration\": 0.1}}]\n```"
               for i in range(n)]
    responses = [f"{MARK}root@abc:/app# echo {i}\n{i}\nroot@abc:/app#" for i in range(n)]
    return [{"task": "agentworld/terminal", "id": f"traj-t{i}", "prompt": prompts, "response": responses,
             "system_str": "SYS", "turn_idx": i, "total_turns": n, **extra} for i in range(1, n + 1)]


def test_messages_follow_official_harness() -> None:
    sample = parse_row(_rows()[2])
    msgs = [(m.role, m.content) for m in sample.messages()]
    assert msgs[0] == ("system", "SYS")
    assert [r for r, _ in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert msgs[-1][1] == sample.prompt[2]
    assert msgs[2][1] == sample.response[0]
    assert sample.ground_truth == sample.response[2]


def test_current_prompt_overrides_and_empty_system_is_omitted() -> None:
    row = {**_rows(2)[1], "current_prompt": "CUR", "system_str": ""}
    msgs = parse_row(row).messages()
    assert msgs[0].role == "user" and msgs[-1].content == "CUR"


def test_roundtrip_keeps_unknown_fields_and_order(tmp_path: Path) -> None:
    rows = _rows(extra_field={"nested": [1, 2]}, score=None)
    src = tmp_path / "terminal_test.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    samples = list(read_bench_jsonl(src))
    out = tmp_path / "out.jsonl"
    write_bench_jsonl(out, samples)
    back = [json.loads(line) for line in out.read_text().splitlines()]
    assert back == rows
    assert [list(r) for r in back] == [list(r) for r in rows]


def test_split_join_is_identity_on_rows() -> None:
    rows = _rows(4, source="real")
    samples = [parse_row(r) for r in rows]
    trajs = join_samples(samples)
    assert len(trajs) == 1 and len(trajs[0].turns) == 4
    assert [s.to_row() for s in split_trajectory(trajs[0])] == rows


def test_trajectory_split_then_join_gives_same_rows() -> None:
    traj = Trajectory(id="t", domain="mcp", system_prompt="S",
                      turns=(Turn(action="a1", observation="o1"), Turn(action="a2", observation="o2")))
    rows = [s.to_row() for s in traj.samples()]
    assert [r["turn_idx"] for r in rows] == [1, 2]
    again = [s.to_row() for s in split_trajectory(join_samples([BenchSample.model_validate(r)
                                                                  for r in rows])[0])]
    assert again == rows


@pytest.mark.parametrize(
    ("mutate", "field", "line"),
    [
        (lambda r: r.pop("system_str"), "system_str", 2),
        (lambda r: r.update(turn_idx=9), "turn_idx", 2),
        (lambda r: r.update(task="agentworld/quantum"), "task", 2),
        (lambda r: r.update(prompt=5), "prompt", 2),
        (lambda r: r.pop("id"), "id", 2),
    ],
)
def test_bad_rows_name_file_line_and_field(tmp_path: Path, mutate, field: str, line: int) -> None:
    rows = _rows(2)
    mutate(rows[1])
    src = tmp_path / "terminal_test.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError, match=field) as info:
        load_samples([tmp_path], known_domains=domain_names())
    err = info.value
    assert err.path == str(src) and err.line == line and err.field == field
    assert str(src) in str(err) and repr(field) in str(err)


def test_the_format_checks_the_domains_it_is_given_and_names_none_itself(tmp_path: Path) -> None:
    """Which domains exist is the registry's answer, passed in; without one any ``task`` is read."""
    rows = _rows(2)
    rows[1]["task"] = "agentworld/quantum"
    src = tmp_path / "x_test.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [s.domain for s in load_samples([src])] == ["terminal", "quantum"]
    with pytest.raises(DataError, match=r"unknown domain 'quantum'; known: terminal, notes$"):
        list(read_bench_jsonl(src, known_domains=iter(["terminal", "notes"])))  # any iterable, read once
    assert parse_row(rows[1], known_domains=["quantum"]).domain == "quantum"


def test_malformed_json_line_is_located(tmp_path: Path) -> None:
    src = tmp_path / "mcp_test.jsonl"
    src.write_text(json.dumps(_rows(1)[0]) + "\n{not json\n")
    with pytest.raises(DataError, match="malformed JSON") as info:
        list(read_bench_jsonl(src))
    assert info.value.line == 2 and "malformed JSON" in str(info.value)


def test_duplicate_ids_are_rejected(tmp_path: Path) -> None:
    row = _rows(1)[0]
    (tmp_path / "a_test.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "b_test.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(DataError, match="duplicate id"):
        load_samples([tmp_path])

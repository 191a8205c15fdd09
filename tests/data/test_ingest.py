"""Ingest: format detection, exact bench round trip on the real corpus, OpenAI chat logs, error policy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentworld.corpus import corpus_path
from agentworld.data import ingest as ingest_module
from agentworld.data.ingest import IngestReport, detect_format, ingest, records, register_converter
from agentworld.data.pipeline import PipelineConfig, write_jsonl_stream
from agentworld.data.process import expand, samples_to_bench_rows
from agentworld.data.scale import plan_shards
from agentworld.domains.mcp.rows import ROWS
from agentworld.envs.mcp_proxy import SessionRecorder
from agentworld.errors import DataError
from agentworld.io import dumps
from agentworld.schema import Trajectory, Turn

SHARED = Path(__file__).parents[3] / "shared" / "data"
TAU = SHARED / "tau_bench_airline_gpt4o_dev.json"
MARK = "**Environment Observation:**\n"


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_bench_corpus_round_trip_is_byte_exact() -> None:
    """ACCEPTANCE: AgentWorldBench JSONL → unified → expanded → AgentWorldBench JSONL gives the same rows."""
    path = corpus_path("terminal")
    lines = path.read_text(encoding="utf-8").splitlines()
    trajs = list(ingest(path))
    assert sum(len(t.turns) for t in trajs) == len(lines)
    out = [dumps(row) for row in samples_to_bench_rows(expand(trajs))]
    assert out == lines


def test_round_trip_through_unified_file(tmp_path: Path) -> None:
    path = corpus_path("terminal")
    unified = tmp_path / "unified.jsonl"
    write_jsonl_stream(unified, (t.model_dump(mode="json") for t in ingest(path, "agentworld-bench")))
    assert detect_format(unified) == "unified"
    out = [dumps(row) for row in samples_to_bench_rows(expand(ingest(unified)))]
    assert out == path.read_text(encoding="utf-8").splitlines()


def test_recording_meta_becomes_trajectory_meta() -> None:
    path = corpus_path("terminal")
    assert detect_format(path) == "recording"
    first = next(iter(ingest(path)))
    assert first.id == "env-variables" and first.domain == "terminal"
    assert first.meta["source"] == str(path) and first.meta["origin"] == "real"
    assert first.meta["scenario"] == "env-variables"
    assert first.turns[0].meta["row"]["id"] == "env-variables-t1"


def test_consecutive_duplicate_trajectories_stay_apart(tmp_path: Path) -> None:
    rows = [{"task": "terminal", "id": f"a-t{i}", "prompt": ["p1", "p2"], "response": ["r1", "r2"],
             "system_str": "S", "turn_idx": i} for i in (1, 2)]
    path = _write(tmp_path / "dup.jsonl", rows + rows)
    trajs = list(ingest(path))
    assert len(trajs) == 2
    assert list(samples_to_bench_rows(expand(trajs))) == rows + rows


def test_bad_rows_raise_or_are_skipped_and_reported(tmp_path: Path) -> None:
    good = {"task": "terminal", "id": "x-t1", "prompt": ["a"], "response": ["b"], "system_str": "S"}
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(good) + "\n{not json\n" + json.dumps({**good, "id": "y-t1", "task": 3}) + "\n"
                    + json.dumps({**good, "id": "z-t1", "prompt": ["c"]}) + "\n")
    with pytest.raises(DataError, match=":2") as info:
        list(ingest(path, "agentworld-bench"))
    assert info.value.line == 2
    report = IngestReport()
    trajs = list(ingest(path, "agentworld-bench", on_error="skip", report=report))
    assert [t.id for t in trajs] == ["x", "z"]
    assert report.skipped == 2 and report.trajectories == 2
    assert [(i.line, i.field) for i in report.issues] == [(2, None), (3, "task")]
    assert all(i.file == str(path) for i in report.issues)


def test_generic_converter_defaults(tmp_path: Path) -> None:
    path = _write(tmp_path / "gen.jsonl", [
        {"system": "SYS", "turns": [{"action": "ls", "observation": "a b", "meta": {"t": 1}}]},
        {"id": "k", "domain": "web", "system": "S2", "turns": []},
    ])
    assert detect_format(path) == "generic"
    first, second = ingest(path)
    assert (first.id, first.domain, first.turns[0].meta) == ("gen-1", "terminal", {"t": 1})
    assert (second.id, second.domain, second.meta["source"]) == ("k", "web", str(path))


def _chat(call_id: str = "c1", args: str = '{"city": "Paris", "days": 2}') -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a travel agent."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": args}}]},
        {"role": "tool", "tool_call_id": call_id, "content": "sunny, 21C"},
        {"role": "assistant", "content": "It is sunny."},
    ]


def test_openai_chat_jsonl_of_message_lists(tmp_path: Path) -> None:
    path = _write(tmp_path / "chat.jsonl", [_chat(), _chat()])
    assert detect_format(path) == "openai-chat"
    traj = next(iter(ingest(path)))
    assert traj.id == "chat-1" and traj.domain == "mcp" and traj.system_prompt == "You are a travel agent."
    (turn,) = traj.turns
    assert turn.action == ('**Action:**\n```json\n{"tool_name":"get_weather","arguments":'
                           '{"city":"Paris","days":2}}\n```')
    assert turn.observation == MARK + "sunny, 21C"
    assert turn.meta["context_before"] == [{"role": "user", "content": "Weather in Paris?"}]
    assert traj.meta["context_after"] == [{"role": "assistant", "content": "It is sunny."}]


def test_openai_chat_errors_are_located(tmp_path: Path) -> None:
    path = _write(tmp_path / "chat.jsonl", [_chat(), _chat(call_id="nope"), _chat(args="{bad")])
    with pytest.raises(DataError, match="tool_call_id") as info:
        list(ingest(path, "openai-chat"))
    assert (info.value.line, info.value.field) == (2, "messages[3].tool_call_id")
    report = IngestReport()
    assert [t.id for t in ingest(path, on_error="skip", report=report)] == ["chat-1"]
    assert [(i.line, i.field) for i in report.issues] == [
        (2, "messages[3].tool_call_id"), (3, "messages[2].tool_calls[0].function.arguments")]


@pytest.mark.skipif(not TAU.exists(), reason="shared/data (tau-bench logs) is not beside the repo")
def test_openai_chat_on_real_tau_bench_logs() -> None:
    items = json.loads(TAU.read_text())
    assert detect_format(TAU) == "openai-chat"
    trajs = list(ingest(TAU))
    assert len(trajs) == len(items) == 40
    for traj, item in zip(trajs, items, strict=True):
        tools = [m for m in item["traj"] if m["role"] == "tool"]
        assert traj.id == f"{item['task_id']}-{item['trial']}" and traj.domain == "mcp"
        assert traj.meta["source"] == str(TAU) and traj.meta["reward"] == item["reward"]
        assert traj.system_prompt == item["traj"][0]["content"]
        assert [t.observation for t in traj.turns] == [MARK + m["content"] for m in tools]
        assert [t.meta["tool_name"] for t in traj.turns] == [m["name"] for m in tools]
    first = trajs[0].turns[0]
    assert first.action == ('**Action:**\n```json\n{"tool_name":"get_user_details","arguments":'
                            '{"user_id":"sophia_silva_7557"}}\n```')
    assert [m["role"] for m in first.meta["context_before"]] == ["user", "assistant", "user", "assistant"]


def test_a_registered_converter_is_detected_and_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ingest_module, "_REGISTRY", dict(ingest_module._REGISTRY))  # leave no trace

    @register_converter("test-steps")
    class StepsConverter:
        @staticmethod
        def sniff(record: object) -> bool:
            return isinstance(record, dict) and "steps" in record

        def read(self, path: Path, *, on_error: str = "raise",
                 report: IngestReport | None = None) -> Iterator[Trajectory]:
            for _, index, rec in records(path):
                turns = tuple(Turn(action=s["cmd"], observation=s["out"]) for s in rec["steps"])
                yield Trajectory(id=str(index), domain="terminal", system_prompt="", turns=turns)

    path = _write(tmp_path / "steps.jsonl", [{"steps": [{"cmd": "ls", "out": "a"}]}])
    assert detect_format(path) == "test-steps"
    assert next(iter(ingest(path))).turns[0].action == "ls"


def test_unknown_format_and_missing_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.jsonl", [{"what": 1}])
    with pytest.raises(DataError, match="cannot tell the format"):
        list(ingest(path))
    with pytest.raises(DataError, match="unknown format"):
        list(ingest(path, "nope"))
    with pytest.raises(DataError, match="no such file"):
        list(ingest(tmp_path / "missing.jsonl"))


def test_incremental_recording_sessions_join_even_interleaved(tmp_path: Path) -> None:
    """``record mcp`` appends a row per answered call (row k holds turns 1…k), so concurrent sessions
    interleave; each session still reads back as one trajectory, and such a file is never sharded."""
    sessions = {"a": SessionRecorder(ROWS, name="a"), "b": SessionRecorder(ROWS, name="b")}
    written: list[dict[str, Any]] = []
    for i, name in enumerate("ababa"):
        rec = sessions[name]
        rec.from_client({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                         "params": {"name": "t", "arguments": {"i": i}}})
        answer = {"content": [{"type": "text", "text": f"{name}{i}"}]}
        rec.from_server({"jsonrpc": "2.0", "id": i, "result": answer})
        written += rec.new_rows()
    corpus = [json.loads(line) for line in corpus_path("terminal").read_text().splitlines()]
    legacy = [r for r in corpus if r["id"].rsplit("-t", 1)[0] == corpus[0]["id"].rsplit("-t", 1)[0]]
    path = _write(tmp_path / "rec.jsonl", written[:2] + legacy + written[2:] + written[:1])  # + a reused id
    assert detect_format(path) == "recording"
    trajs = list(ingest(path))
    ids = [sessions["a"].trajectory_id, sessions["b"].trajectory_id, sessions["a"].trajectory_id]
    assert [t.id for t in trajs] == [legacy[0]["id"].rsplit("-t", 1)[0], *ids]  # whole ones first
    a, b, again = trajs[1:]
    assert [t.observation for t in a.turns] == [f"{MARK}a0", f"{MARK}a2", f"{MARK}a4"]
    assert [t.observation for t in b.turns] == [f"{MARK}b1", f"{MARK}b3"] and len(again.turns) == 1
    assert a.meta["calls"] == 3 and a.meta["origin"] == "real" and "incremental" not in a.meta
    config = PipelineConfig.model_validate({"inputs": [{"path": str(path)}],
                                            "output": {"format": "samples", "path": str(tmp_path / "o")}})
    assert [s.whole for s in plan_shards(config, 8, min_shard_bytes=1)] == [True]

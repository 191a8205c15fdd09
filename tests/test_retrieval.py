"""Retrieval world model: index, similarity, request parsing, terminal adaptation, backend contract."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from agentworld.models import ChatRequest, EmptyCorpusError, RetrievalIndex, create_backend
from agentworld.models.parsing import parse_prediction
from agentworld.models.retrieval import detect_domain, normalise_action, parse_query
from agentworld.schema import BenchSample, Message, Trajectory, Turn, write_bench_jsonl


def action(keys: str, state: str | None = None) -> str:
    body = json.dumps([{"keystrokes": keys, "duration": 0.5}], indent=2, ensure_ascii=False)
    head = f"**Current State:**\n{state}\n\n" if state is not None else ""
    return f"{head}**Action:**\n```json\n{body}\n```"


def terminal(tid: str, host: str, cwd: str, steps: list[tuple[str, str]]) -> list[BenchSample]:
    turns = tuple(Turn(action=action(k, f"root@{host}:{cwd}#" if i == 0 else None),
                       observation="**Environment Observation:**\n" + o) for i, (k, o) in enumerate(steps))
    return Trajectory(id=tid, domain="terminal", task="terminal", system_prompt="sys", turns=turns).samples()


A = "ad092d3df69c"
CORPUS = [
    *terminal("t-ls", A, "/app", [
        ("ls -la\n", f"root@{A}:/app# ls -la\ntotal 8\ndrwxr-xr-x 2 root root 4096 Mar 14 09:12 .\n"
                     f"-rw-r--r-- 1 root root  220 Mar 14 09:10 README.md\nroot@{A}:/app#"),
        ("cd src\n", f"root@{A}:/app# cd src\nroot@{A}:/app/src#"),
        ("pwd\n", f"root@{A}:/app/src# pwd\n/app/src\nroot@{A}:/app/src#"),
    ]),
    *terminal("t-py", A, "/app", [
        ("python3 --version\n", f"root@{A}:/app# python3 --version\nPython 3.11.2\nroot@{A}:/app#"),
        ("echo $((6*7))\n", f"root@{A}:/app# echo $((6*7))\n42\nroot@{A}:/app#"),
    ]),
    BenchSample(task="mcp", id="m-1", prompt=[json.dumps({"tool_name": "get_user_details",
                                                          "arguments": {"user_id": "mia_li_3668"}})],
                response=['**Environment Observation:**\n{"user_id": "mia_li_3668", "membership": "gold"}']),
    BenchSample(task="mcp", id="m-2",
                prompt=[json.dumps({"tool_name": "list_all_airports", "arguments": {}})],
                response=['**Environment Observation:**\n{"SFO": "San Francisco", "JFK": "New York"}']),
]


def request(history: list[tuple[str, str]], act: str, **extra: object) -> ChatRequest:
    msgs = [Message(role="system", content="You are a world model.")]
    for a, o in history:
        msgs += [Message(role="user", content=a), Message(role="assistant", content=o)]
    msgs.append(Message(role="user", content=act))
    return ChatRequest(messages=tuple(msgs), extra=dict(extra))


def complete(req: ChatRequest, **options: object) -> tuple[str, dict[str, object]]:
    result = asyncio.run(create_backend("retrieval", corpus=CORPUS, **options).complete(req))
    assert result.source == "retrieval"
    return parse_prediction(result.content), result.meta


def test_index_deduplicates_rows_of_one_trajectory() -> None:
    index = RetrievalIndex(CORPUS)
    assert len(index) == 3 + 2 + 2  # each turn once, though every row carries the whole trajectory
    assert {t.domain for t in index.transitions} == {"terminal", "mcp"}
    t = next(t for t in index.transitions if t.key == "cd src")
    assert t.context == "ls -la cwd=/app" and t.source == "t-ls-t2" and t.turn == 2


def test_exclude_leaves_out_evaluated_scenarios() -> None:
    index = RetrievalIndex(CORPUS, exclude=lambda row: row.id.startswith("t-ls"))
    assert all(not t.source.startswith("t-ls") for t in index.transitions) and len(index) == 4


def test_exact_command_in_new_session_is_adapted_to_host_and_cwd() -> None:
    B = "0f0e0d0c0b0a"
    first = action("ls -la\n", f"root@{B}:/srv/data#")
    text, meta = complete(request([], first))
    lines = text.splitlines()
    assert lines[0] == "**Environment Observation:**"
    assert lines[1] == f"root@{B}:/srv/data# ls -la" and lines[-1] == f"root@{B}:/srv/data#"
    assert "README.md" in text and A not in text
    assert meta["neighbour"] == "t-ls-t1#1" and float(meta["similarity"]) > 0.85  # type: ignore[arg-type]


def test_similar_command_takes_the_current_echo_and_history_prompt() -> None:
    B = "0f0e0d0c0b0a"
    hist = [(action("cd /opt\n", f"root@{B}:/#"),
             f"**Environment Observation:**\nroot@{B}:/# cd /opt\nroot@{B}:/opt#")]
    text, meta = complete(request(hist, action("ls -l\n")))
    assert text.splitlines()[1] == f"root@{B}:/opt# ls -l"
    assert text.splitlines()[-1] == f"root@{B}:/opt#" and meta["neighbour"] == "t-ls-t1#1"
    assert 0.3 < float(meta["similarity"]) < 1.0  # type: ignore[arg-type]


def test_mcp_call_is_matched_by_tool_and_arguments() -> None:
    act = json.dumps({"tool_name": "get_user_details", "arguments": {"user_id": "noah_9"}})
    assert detect_domain(act) == "mcp"
    assert normalise_action(act) == 'get_user_details user_id="noah_9"'
    text, meta = complete(request([], act))
    assert meta["neighbour"] == "m-1#1" and "mia_li_3668" in text  # nothing invented beyond the prompt


def test_domain_hint_and_query_parsing() -> None:
    q = parse_query(request([], "list airports please", domain="mcp"))
    assert q.domain == "mcp" and q.prev_action is None
    _, meta = complete(request([], "list_all_airports", domain="mcp"))
    assert meta["neighbour"] == "m-2#1"
    sample = CORPUS[2]  # t-ls row for turn 3 (pwd)
    assert RetrievalIndex(CORPUS).nearest(sample, k=2)[0].source == "t-ls-t3"


def test_empty_corpus_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmptyCorpusError, match="empty"):
        create_backend("retrieval", corpus=[])
    with pytest.raises(EmptyCorpusError):
        RetrievalIndex(CORPUS, exclude=lambda _: True).nearest([Message(role="user", content="x")])


def test_backend_reads_corpus_files(tmp_path: Path) -> None:
    path = tmp_path / "terminal_test.jsonl"
    write_bench_jsonl(path, CORPUS[:3])
    backend = create_backend("retrieval", corpus=[path])
    result = asyncio.run(backend.complete(request([], action("pwd\n", f"root@{A}:/app/src#"))))
    assert result.content.startswith("<predicted_observation>**Environment Observation:**\n")
    assert parse_prediction(result.content).splitlines()[2] == "/app/src"


def test_fast_enough_for_thousands_of_transitions() -> None:
    rows = []
    for i in range(600):
        steps = [(f"cat /app/file_{i}_{j}.txt\n", f"root@{A}:/app# cat /app/file_{i}_{j}.txt\nline {i} {j}\n"
                  f"root@{A}:/app#") for j in range(5)]
        rows.append(terminal(f"big-{i}", A, "/app", steps)[0])
    start = time.perf_counter()
    index = RetrievalIndex(rows)
    for i in range(50):
        assert index.nearest([Message(role="user", content=action(f"cat /app/file_{i}_3.txt\n"))])[0].key \
            == f"cat /app/file_{i}_3.txt"
    assert len(index) == 3000 and time.perf_counter() - start < 10

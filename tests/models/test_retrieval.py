"""Retrieval world model: index, similarity, request parsing, terminal adaptation, backend contract,
corpora of any domain (AgentWorldBench or unified files), MCP matching, the missing-domain error."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.data.ingest import ingest
from agentworld.domains.actions import detect_domain, normalise_action, tool_call
from agentworld.errors import BackendError, DataError
from agentworld.eval import EvalConfig, run_eval
from agentworld.io import read_journal
from agentworld.models import ChatRequest, EmptyCorpusError, RetrievalIndex, create_backend
from agentworld.models.parsing import parse_prediction
from agentworld.models.retrieval import DomainNotCoveredError, parse_query
from agentworld.schema import BenchSample, Message, Trajectory, Turn, write_bench_jsonl

TAU = Path(__file__).parents[3] / "shared" / "data" / "tau_bench_airline_gpt4o_dev.json"
MARK = "**Environment Observation:**\n"


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


def test_empty_corpus_is_a_clear_error() -> None:
    with pytest.raises(EmptyCorpusError, match=r"corpus \(nothing\) is empty: build it from recordings with "
                       r"--model-corpus PATH"):
        create_backend("retrieval", corpus=[])
    with pytest.raises(EmptyCorpusError, match=r"is empty.*check the exclude predicate"):
        RetrievalIndex(CORPUS, exclude=lambda _: True).nearest([Message(role="user", content="x")])


def test_backend_reads_corpus_files(tmp_path: Path) -> None:
    path = tmp_path / "terminal_test.jsonl"
    write_bench_jsonl(path, CORPUS[:3])
    backend = create_backend("retrieval", corpus=[path])
    result = asyncio.run(backend.complete(request([], action("pwd\n", f"root@{A}:/app/src#"))))
    assert result.content.startswith("<predicted_observation>**Environment Observation:**\n")
    assert parse_prediction(result.content).splitlines()[2] == "/app/src"


def test_thousands_of_near_identical_commands_each_find_their_own() -> None:
    """Only the file name tells 3000 transitions apart; each command still finds its own recording
    (the shortlist keeps the best-scored candidates, so the right one must score among them)."""
    rows = []
    for i in range(600):
        steps = [(f"cat /app/file_{i}_{j}.txt\n", f"root@{A}:/app# cat /app/file_{i}_{j}.txt\nline {i} {j}\n"
                  f"root@{A}:/app#") for j in range(5)]
        rows.append(terminal(f"big-{i}", A, "/app", steps)[0])
    index = RetrievalIndex(rows)
    assert len(index) == 3000
    for i in range(0, 600, 12):
        found = index.nearest([Message(role="user", content=action(f"cat /app/file_{i}_3.txt\n"))])[0]
        assert (found.key, found.source, found.turn) == (f"cat /app/file_{i}_3.txt", f"big-{i}-t1", 4)
        assert f"line {i} 3" in found.observation


# -- any domain: MCP, unified files, the missing-domain error ---------------------------------------


def call(tool: str, **args: object) -> str:
    return "**Action:**\n```json\n" + json.dumps({"tool_name": tool, "arguments": args}) + "\n```"


def mcp(tid: str, steps: list[tuple[str, str]]) -> Trajectory:
    return Trajectory(id=tid, domain="mcp", system_prompt="You simulate an airline API.",
                      turns=tuple(Turn(action=a, observation=MARK + o) for a, o in steps))


AIRLINE = [
    mcp("u-1", [(call("get_user", user_id="noah_brown_1234"), '{"user_id": "noah_brown_1234", "tier": 2}'),
                (call("get_reservation", reservation_id="ZZZ999"), '{"reservation_id": "ZZZ999"}')]),
    mcp("u-2", [(call("delete_user", user_id="mia_li_3668"), '{"deleted": true}')]),
    mcp("f-1", [(call("search_flights", origin="SFO", destination="JFK", date="2024-05-15"), '["HAT001"]'),
                (call("search_flights", origin="SFO", destination="JFK", date="2024-05-16"), '["HAT002"]'),
                (call("search_flights", origin="SFO", destination="LAX", date="2024-05-16"), '["HAT003"]')]),
]
AIRLINE_ROWS = [row for t in AIRLINE for row in t.samples()]


def test_mcp_neighbour_shares_the_tool_before_any_argument_overlap() -> None:
    """A lookup is never answered with a recorded *deletion* because it names the same user."""
    index = RetrievalIndex(AIRLINE_ROWS)
    query = [Message(role="user", content=call("get_user", user_id="mia_li_3668"))]
    found = index.search(query, k=3)
    assert [tool_call(n.transition.action)[0] for n in found] == [  # type: ignore[index]
        "get_user", "delete_user", "get_reservation"]
    backend = create_backend("retrieval", corpus=AIRLINE_ROWS)
    result = asyncio.run(backend.complete(ChatRequest(messages=tuple(query))))
    assert parse_prediction(result.content) == MARK + '{"user_id": "noah_brown_1234", "tier": 2}'


def test_mcp_same_call_gives_its_recording_and_else_the_closest_arguments() -> None:
    index = RetrievalIndex(AIRLINE_ROWS)

    def best(**args: object) -> str:
        return index.nearest([Message(role="user", content=call("search_flights", **args))])[0].observation

    assert best(origin="SFO", destination="JFK", date="2024-05-16") == MARK + '["HAT002"]'
    assert best(date="2024-05-16", destination="LAX", origin="SFO") == MARK + '["HAT003"]'  # any key order
    assert best(origin="SFO", destination="LAX", date="2024-06-30") == MARK + '["HAT003"]'  # 2 of 3 shared


def test_a_domain_the_corpus_lacks_is_refused_per_request_and_up_front() -> None:
    backend = create_backend("retrieval", corpus=CORPUS[:5])  # terminal rows only
    request = ChatRequest(messages=(Message(role="user", content=call("get_user", user_id="noah")),))
    with pytest.raises(DomainNotCoveredError, match=r"^the retrieval world model has no mcp transitions: its "
                       r"corpus \(5 rows given in memory\) holds 5 terminal transitions; build it from "
                       r"recordings of that domain with --model-corpus PATH") as info:
        asyncio.run(backend.complete(request))
    assert isinstance(info.value, BackendError) and not info.value.retryable
    assert info.value.domains == ("mcp",) and info.value.held == {"terminal": 5}
    assert "\n" not in str(info.value)
    backend.check_domains(["terminal"])  # type: ignore[attr-defined]
    with pytest.raises(DomainNotCoveredError, match=r"no mcp, search transitions.*of those domains"):
        backend.check_domains(["terminal", "search", "mcp"])  # type: ignore[attr-defined]
    default = create_backend("retrieval")
    default.check_domains(["terminal", "mcp", "search", "swe"])  # type: ignore[attr-defined]
    with pytest.raises(DomainNotCoveredError, match=r"its corpus \(the shipped [a-z, ]*terminal[a-z, ]* "
                       r"corpora\) holds [\w, ]*\d+ terminal(, [\w, ]+)? transitions"):
        default.check_domains(["android"])  # type: ignore[attr-defined]


def test_unified_corpus_gives_the_same_transitions_as_bench_rows(tmp_path: Path) -> None:
    trajectories = [*AIRLINE, Trajectory.model_validate(join(CORPUS[:3]))]
    unified = tmp_path / "unified.jsonl"
    unified.write_text("".join(json.dumps(t.model_dump(mode="json")) + "\n" for t in trajectories))
    bench = tmp_path / "rows" / "recorded.jsonl"
    bench.parent.mkdir()
    write_bench_jsonl(bench, [row for t in trajectories for row in t.samples()])
    from_unified, from_bench = RetrievalIndex([unified]), RetrievalIndex([bench.parent])
    assert from_unified.transitions == from_bench.transitions
    assert from_unified.domain_counts() == {"mcp": 6, "terminal": 3}
    both = RetrievalIndex([unified, bench])  # the same recordings twice: each transition once
    assert both.transitions == from_bench.transitions and both.label == f"{unified}, {bench}"


def join(rows: list[BenchSample]) -> dict[str, object]:
    from agentworld.schema import join_samples

    return join_samples(rows)[0].model_dump(mode="json")


def test_bad_corpus_input_is_located(tmp_path: Path) -> None:
    good = AIRLINE[0].model_dump(mode="json")
    unified = tmp_path / "unified.jsonl"
    unified.write_text(json.dumps(good) + "\n" + json.dumps({**good, "turns": "none"}) + "\n")
    with pytest.raises(DataError, match=r"unified\.jsonl:2, sample 'u-1', field 'turns'"):
        RetrievalIndex([unified])
    unified.write_text(json.dumps({**good, "domain": "cooking"}) + "\n")
    with pytest.raises(DataError, match=r"unified\.jsonl:1, sample 'u-1', field 'domain': unknown domain "
                       "'cooking'"):
        RetrievalIndex([unified])
    rows = tmp_path / "rows.jsonl"
    write_bench_jsonl(rows, AIRLINE[0].samples())
    rows.write_text(rows.read_text() + '{"task": "mcp", "id": "x", "prompt": ["a"], "response": ["b"]}\n')
    with pytest.raises(DataError, match=r"rows\.jsonl:3, sample 'x', field 'system_str': missing required "
                       "field"):
        RetrievalIndex([rows])
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    with pytest.raises(DataError, match=r"chat\.jsonl:1: neither AgentWorldBench rows nor unified "
                       r"trajectories.*agentworld data convert --data"):
        RetrievalIndex([chat])
    with pytest.raises(DataError, match=r"missing\.jsonl: no such file or folder"):
        create_backend("retrieval", corpus=[tmp_path / "missing.jsonl"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"empty: folder holds no \*\.jsonl files"):
        RetrievalIndex([tmp_path / "empty"])
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n")
    with pytest.raises(EmptyCorpusError, match=r"corpus \(.*blank.jsonl\) is empty"):
        create_backend("retrieval", corpus=[blank])


@pytest.mark.skipif(not TAU.exists(), reason="shared/data (tau-bench logs) is not beside the repo")
def test_real_tau_bench_calls_held_out(tmp_path: Path) -> None:
    """Trials 0-2 of 10 real airline tasks as AgentWorldBench rows; trial 3's calls are predicted."""
    trajectories = list(ingest(TAU, "openai-chat"))
    corpus = tmp_path / "mcp_corpus.jsonl"
    write_bench_jsonl(corpus, [row for t in trajectories if t.meta["trial"] != 3 for row in t.samples()])
    backend = create_backend("retrieval", corpus=[corpus])
    recorded: dict[str, set[str]] = {}
    by_tool: dict[str, list[str]] = {}
    for t in backend.index.transitions:  # type: ignore[attr-defined]
        recorded.setdefault(t.key, set()).add(t.observation)
        by_tool.setdefault(t.group, []).append(t.observation)
    held = [s for t in trajectories if t.meta["trial"] == 3 for s in t.samples()]
    same_tool = exact = baseline = determined = 0
    for sample in held:
        tool, key = tool_call(sample.action)[0], normalise_action(sample.action)  # type: ignore[index]
        result = asyncio.run(backend.complete(ChatRequest(messages=tuple(sample.messages()))))
        neighbour = backend.index.search(sample)[0].transition  # type: ignore[attr-defined]
        predicted = neighbour.observation  # tool results are returned as recorded
        assert result.content == f"<predicted_observation>{predicted}</predicted_observation>"
        if tool in by_tool:
            assert neighbour.group == tool, sample.id
            same_tool += 1
        if len(recorded.get(key, ())) == 1:  # this very call was recorded, always with one answer
            assert predicted == next(iter(recorded[key])), sample.id
            determined += 1
        exact += predicted == sample.ground_truth
        outputs = Counter(by_tool.get(tool, []))
        baseline += bool(outputs) and outputs.most_common(1)[0][0] == sample.ground_truth
    assert (len(held), same_tool, determined) == (42, 35, 18)
    assert exact == 28 and baseline == 15  # 66.7% vs 35.7% for the same tool's most frequent output


def test_eval_cli_refuses_data_the_default_corpus_cannot_answer(tmp_path: Path) -> None:
    data = tmp_path / "android_test.jsonl"
    write_bench_jsonl(data, [s.model_copy(update={"task": "android"}) for s in AIRLINE[2].samples()])
    result = CliRunner().invoke(app, ["eval", "run", "--model", "retrieval", "--data", str(data),
                                      "--out", str(tmp_path / "run"), "--no-judge", "--no-progress"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: the retrieval world model has no android transitions")
    assert "--model-corpus PATH" in lines[0] and not (tmp_path / "run").exists()


def test_eval_cli_answers_mcp_data_from_the_shipped_mcp_corpus(tmp_path: Path) -> None:
    """The offline model covers MCP out of the box (it refused MCP rows before the MCP corpus shipped)."""
    data = tmp_path / "mcp_test.jsonl"
    write_bench_jsonl(data, AIRLINE[2].samples())
    result = CliRunner().invoke(app, ["eval", "run", "--model", "retrieval", "--data", str(data),
                                      "--out", str(tmp_path / "run"), "--no-judge", "--no-progress"])
    assert result.exit_code == 0, result.output
    preds = list(read_journal(tmp_path / "run" / "predictions.jsonl"))
    assert len(preds) == len(AIRLINE[2].samples()) and all(p["source"] == "retrieval" and not p["error"]
                                                            for p in preds)


def test_eval_on_mcp_data_with_an_mcp_corpus_runs_to_completion(tmp_path: Path) -> None:
    data = tmp_path / "data" / "mcp_test.jsonl"
    write_bench_jsonl(data, [row for t in AIRLINE for row in t.samples()])
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(t.model_dump(mode="json")) + "\n" for t in AIRLINE))
    config = EvalConfig(data=[data], out=tmp_path / "run", model="retrieval", no_judge=True, progress=False)
    report = run_eval(config, model=create_backend("retrieval", corpus=[corpus]))
    preds = list(read_journal(tmp_path / "run" / "predictions.jsonl"))
    assert len(preds) == 6 and all(p["source"] == "retrieval" and not p["error"] for p in preds)
    assert report.rules["mcp"]["exact"] == 100.0  # every call was recorded


def test_eval_cli_model_corpus_option(tmp_path: Path) -> None:
    data = tmp_path / "mcp_test.jsonl"
    write_bench_jsonl(data, [row for t in AIRLINE for row in t.samples()])
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(t.model_dump(mode="json")) + "\n" for t in AIRLINE))
    result = CliRunner().invoke(app, ["eval", "run", "--model", "retrieval", "--model-corpus", str(corpus),
                                      "--data", str(data), "--out", str(tmp_path / "run"), "--no-judge",
                                      "--no-progress"])
    assert result.exit_code == 0, result.output
    preds = list(read_journal(tmp_path / "run" / "predictions.jsonl"))
    assert len(preds) == 6 and all(not p["error"] for p in preds)


@pytest.mark.parametrize(("spec", "call", "shown"), [
    ({"domain": "search"}, {"tool_name": "web_search", "arguments": {"query": "json encoder"}},
     "[1] https://docs.python.org/3/library/json.html\nTitle: json"),
    ({"domain": "swe", "initial_state": "Working directory: /app (git repository of inflection 0.5.1)"},
     {"tool_name": "glob", "arguments": {"pattern": "**/*.cfg"}}, "Found 4 file(s) matching"),
])
def test_the_simulator_on_a_tool_call_domain_is_answered_from_its_own_rows_not_mcp_ones(
        spec: dict[str, str], call: dict[str, Any], shown: str) -> None:
    """A search or SWE call reads like an MCP call; the request's system prompt tells retrieval the
    domain: sent stripped by the simulator (stored with a final newline in the corpus), and with the
    sections the simulator appends to the domain's prompt (an initial state)."""
    from agentworld.sim.session import Simulator
    from agentworld.sim.types import WorldSpec

    with Simulator(create_backend("retrieval")) as sim:
        sim.reset(WorldSpec(**spec), seed=0)
        found = sim.step(call)
    assert found.source == "world_model"
    assert found.observation.startswith(shown), found.observation
    assert "entities" not in found.observation and "/workspace" not in found.observation

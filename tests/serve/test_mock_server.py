"""The mock OpenAI-compatible server: replay, corruption, judge replies, failure injection, log."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from agentworld.eval import templates
from agentworld.eval.rules.corruptions import corrupt_observation
from agentworld.models.base import ChatRequest
from agentworld.models.openai_compat import OpenAIBackend
from agentworld.models.parsing import JudgeParseError, parse_choice, parse_judge, parse_prediction
from agentworld.schema import OBSERVATION_MARKER, BenchSample, Message, load_samples
from agentworld.serve.mock_server import (
    FATAL_MALFORMED_KINDS,
    MALFORMED_KINDS,
    MockConfig,
    MockState,
    extract_blocks,
    messages_key,
    render_verdict,
    rubric_verdict,
    run_mock_server,
    strip_marker,
)
from agentworld.serve.serve_cli import app as serve_app

# -- fixtures ------------------------------------------------------------------------------------


def _terminal_action(keys: str, screen: str | None = None) -> str:
    action = json.dumps([{"keystrokes": keys, "duration": 0.5}], indent=2, ensure_ascii=False)
    head = f"**Current State:**\n{screen}\n\n" if screen else ""
    return f"{head}**Action:**\n```json\n{action}\n```"


def _terminal_rows(n: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        prompts = [_terminal_action("ls -la\n", f"root@host{i}:/app#"),
                   _terminal_action(f"cat notes{i}.txt\n")]
        responses = [
            f"{OBSERVATION_MARKER}\nroot@host{i}:/app# ls -la\ntotal {8 + i}\n"
            f"drwxr-xr-x 2 root root 4096 Jan {i % 28 + 1} 10:00 .\n"
            f"-rw-r--r-- 1 root root {100 + i} notes{i}.txt\n"
            f"root@host{i}:/app#",
            f"{OBSERVATION_MARKER}\nroot@host{i}:/app# cat notes{i}.txt\nbuy milk {i}\ncall alice at {i}pm\n"
            f"root@host{i}:/app#",
        ]
        for turn in (1, 2):
            rows.append({"task": "AgentWorldBench/terminal", "id": f"term-{i}-t{turn}", "prompt": prompts,
                         "response": responses, "current_prompt": prompts[turn - 1],
                         "system_str": "You simulate a Linux terminal.", "turn_idx": turn, "total_turns": 2})
    return rows


def _mcp_rows(n: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        action = f'**Action:**\n{{"tool": "get_weather", "arguments": {{"city": "City{i}"}}}}'
        obs = (f'{OBSERVATION_MARKER}\n{{\n  "city": "City{i}",\n  "temperature_c": {10 + i},\n'
               f'  "condition": "cloudy",\n  "humidity": {40 + i}\n}}')
        rows.append({"task": "AgentWorldBench/mcp", "id": f"mcp-{i}", "prompt": [action], "response": [obs],
                     "system_str": "You simulate MCP tool servers.", "turn_idx": 1, "total_turns": 1})
    return rows


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "bench"
    folder.mkdir()
    for name, rows in (("terminal_test.jsonl", _terminal_rows(12)), ("mcp_test.jsonl", _mcp_rows(16))):
        (folder / name).write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return folder


@pytest.fixture
def samples(data_dir: Path) -> list[BenchSample]:
    return load_samples([data_dir])


@pytest.fixture
def server(data_dir: Path) -> Iterator[str]:
    with run_mock_server(MockConfig(data=[data_dir])) as url:
        yield url


def _wire(messages: list[Message] | tuple[Message, ...]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


def _post(url: str, messages: list[dict[str, str]], **extra: Any) -> httpx.Response:
    body = {"model": "m", "messages": messages, **extra}
    return httpx.post(f"{url}/chat/completions", json=body, timeout=10)


def _content(resp: httpx.Response) -> str:
    assert resp.status_code == 200, resp.text
    return str(resp.json()["choices"][0]["message"]["content"])


def _admin(url: str, path: str) -> Any:
    return httpx.get(url.removesuffix("/v1") + path, timeout=10).json()


def _rubric_user(prediction: str, truth: str) -> str:
    return templates.RUBRIC_USER.format(
        context="", current=f"{templates.CURRENT_HEADING}\n\n**Action:**\nls",
        predicted=templates.fenced(templates.PREDICTED_HEADING, strip_marker(prediction)),
        ground_truth=templates.fenced(templates.TRUTH_HEADING, strip_marker(truth))).strip()


def _pair_user(a: str, b: str, truth: str | None = None) -> str:
    blocks = {"context": "", "current": f"{templates.CURRENT_HEADING}\n\n**Action:**\nls",
              "response_a": templates.fenced(templates.RESPONSE_A_HEADING, strip_marker(a)),
              "response_b": templates.fenced(templates.RESPONSE_B_HEADING, strip_marker(b))}
    if truth is None:
        return templates.TURING_USER.format(**blocks).strip()
    return templates.REFERENCE_USER.format(
        **blocks, ground_truth=templates.fenced(templates.TRUTH_HEADING, strip_marker(truth))).strip()


# -- world-model replay --------------------------------------------------------------------------


def test_replays_ground_truth_exactly_for_every_row(server: str, samples: list[BenchSample]) -> None:
    for sample in samples:
        content = _content(_post(server, _wire(sample.messages())))
        assert content == f"<predicted_observation>{sample.ground_truth}</predicted_observation>"
        assert parse_prediction(content) == sample.ground_truth.strip()
    log = _admin(server, "/_mock/requests")
    assert [e["sample_id"] for e in log] == [s.id for s in samples]
    assert [e["key"] for e in log] == [messages_key(s.messages()) for s in samples]
    assert all(e["kind"] == "world" and e["status"] == 200 and "messages" not in e for e in log)
    stats = _admin(server, "/_mock/stats")
    assert stats["matched"] == len(samples) and stats.get("unmatched", 0) == 0


def test_unknown_messages_get_a_generic_observation(server: str, samples: list[BenchSample]) -> None:
    messages = _wire(samples[0].messages())
    messages[-1]["content"] += " "  # not exactly a known row any more
    content = _content(_post(server, messages))
    assert parse_prediction(content).startswith(OBSERVATION_MARKER)
    assert _admin(server, "/_mock/stats")["unmatched"] == 1
    full = _admin(server, "/_mock/requests?full=1")
    assert full[0]["messages"] == messages and full[0]["sample_id"] is None


def test_models_endpoint_and_reset(server: str, samples: list[BenchSample]) -> None:
    models = httpx.get(f"{server}/models").json()
    assert models["data"][0]["id"] == "mock"
    _post(server, _wire(samples[0].messages()))
    assert httpx.post(server.removesuffix("/v1") + "/_mock/reset").json() == {"ok": True}
    assert _admin(server, "/_mock/requests") == []
    assert _post(server, [{"role": "user"}]).status_code == 200  # content missing: treated as ""
    assert _post(server, []).status_code == 400


# -- corruption ----------------------------------------------------------------------------------


def test_corruption_is_nested_as_the_rate_rises_and_deterministic(data_dir: Path,
                                                                   samples: list[BenchSample]) -> None:
    ids = [s.id for s in samples]
    previous: set[str] = set()
    sizes = []
    for rate in (0.0, 0.2, 0.5, 0.8, 1.0):
        state = MockState(MockConfig(data=[data_dir], corruption_rate=rate, seed=7))
        corrupted = {i for i in ids if state.is_corrupted(i)}
        assert previous <= corrupted
        previous = corrupted
        sizes.append(len(corrupted))
    assert sizes[0] == 0 and sizes[-1] == len(ids) and 0 < sizes[2] < len(ids)
    other_seed = MockState(MockConfig(data=[data_dir], corruption_rate=0.5, seed=8))
    assert {i for i in ids if other_seed.is_corrupted(i)} != {
        i for i in ids if MockState(MockConfig(data=[data_dir], corruption_rate=0.5, seed=7)).is_corrupted(i)}


def test_corrupted_replies_differ_meaningfully_and_repeat(data_dir: Path, samples: list[BenchSample]) -> None:
    config = MockConfig(data=[data_dir], corruption_rate=0.5, seed=3)
    state = MockState(config)
    replies: list[dict[str, str]] = []
    for _ in range(2):
        with run_mock_server(config) as url:
            replies.append({s.id: parse_prediction(_content(_post(url, _wire(s.messages()))))
                            for s in samples})
    assert replies[0] == replies[1]
    for sample in samples:
        got, truth = replies[0][sample.id], sample.ground_truth.strip()
        if not state.is_corrupted(sample.id):
            assert got == truth
            continue
        assert got != truth and got.startswith(OBSERVATION_MARKER)
        truth_lines = truth.splitlines()[1:]
        kept = sum(line in got.splitlines() for line in truth_lines)
        assert kept <= len(truth_lines) // 2, (truth, got)


def test_corrupt_observation_keeps_marker_on_short_texts() -> None:
    texts = (f"{OBSERVATION_MARKER}\nok", f"{OBSERVATION_MARKER}", f"{OBSERVATION_MARKER} 42 files", "plain")
    for text in texts:
        out = corrupt_observation(text, "tok")
        assert out != text
        assert out.startswith(OBSERVATION_MARKER) == text.startswith(OBSERVATION_MARKER)
        assert corrupt_observation(text, "tok") == out


# -- judge replies -------------------------------------------------------------------------------


def test_rubric_scores_follow_similarity(server: str, samples: list[BenchSample]) -> None:
    truth = samples[0].ground_truth
    system = {"role": "system", "content": "You are a judge."}
    perfect = parse_judge(_content(_post(server, [system, {"role": "user",
                                                             "content": _rubric_user(truth, truth)}])))
    assert perfect.scores == {d: 5 for d in perfect.scores} and perfect.total_score == 5.0
    wrong = corrupt_observation(truth, "x")
    worse = parse_judge(_content(_post(server, [system, {"role": "user",
                                                           "content": _rubric_user(wrong, truth)}])))
    assert worse.total_score < perfect.total_score
    log = _admin(server, "/_mock/requests")
    assert [(e["kind"], e["mode"]) for e in log] == [("judge", "rubric")] * 2


def test_extract_blocks_handles_fences_inside_content() -> None:
    pred = "```\ncode\n```\nafter"
    truth = "line\n```python\nx = 1\n```"
    blocks = extract_blocks(_rubric_user(pred, truth), (templates.PREDICTED_HEADING, templates.TRUTH_HEADING))
    assert blocks == {templates.PREDICTED_HEADING: pred, templates.TRUTH_HEADING: truth}
    empty = extract_blocks(_rubric_user("", "x"), (templates.PREDICTED_HEADING, templates.TRUTH_HEADING))
    assert empty[templates.PREDICTED_HEADING] == "" and empty[templates.TRUTH_HEADING] == "x"


@pytest.mark.parametrize("kind", MALFORMED_KINDS)
def test_each_malformed_kind_parses_only_when_recoverable(kind: str) -> None:
    verdict = rubric_verdict("a b c", "a b d")
    raw = render_verdict(verdict, kind)
    assert raw != render_verdict(verdict)
    if kind in FATAL_MALFORMED_KINDS:
        with pytest.raises(JudgeParseError, match=r"no JSON verdict|is not a number"):
            parse_judge(raw)
    else:
        assert parse_judge(raw).scores == verdict["scores"]


def test_malformed_judge_replies_fail_then_a_retry_succeeds(data_dir: Path,
                                                            samples: list[BenchSample]) -> None:
    config = MockConfig(data=[data_dir], malformed_judge_rate=0.5,
                        malformed_kinds=tuple(sorted(FATAL_MALFORMED_KINDS)), seed=1)
    truth = samples[3].ground_truth
    messages = [{"role": "user", "content": _rubric_user(truth, truth)}]
    with run_mock_server(config) as url:
        outcomes = []
        for _ in range(12):
            try:
                parse_judge(_content(_post(url, messages)))
                outcomes.append(True)
            except JudgeParseError:
                outcomes.append(False)
        log = _admin(url, "/_mock/requests")
        assert [e["malformed"] is None for e in log] == outcomes
        assert [e["attempt"] for e in log] == list(range(12))
        assert True in outcomes and False in outcomes
        httpx.post(url.removesuffix("/v1") + "/_mock/reset")
        again = [_admin(url, "/_mock/stats")]
        replay = []
        for _ in range(12):
            try:
                parse_judge(_content(_post(url, messages)))
                replay.append(True)
            except JudgeParseError:
                replay.append(False)
        assert replay == outcomes and again[0]["samples"] == len(samples)


def test_turing_picks_the_known_ground_truth(server: str, samples: list[BenchSample]) -> None:
    truth = samples[5].ground_truth
    fake = corrupt_observation(truth, "fake")
    for a, b, expected in ((truth, fake, "A"), (fake, truth, "B")):
        content = _content(_post(server, [{"role": "user", "content": _pair_user(a, b)}]))
        assert parse_choice(content) == expected
    assert [e["mode"] for e in _admin(server, "/_mock/requests")] == ["turing", "turing"]


def test_reference_picks_the_candidate_closest_to_truth(server: str, samples: list[BenchSample]) -> None:
    truth = samples[7].ground_truth
    near = truth.replace("milk", "bread")
    far = f"{OBSERVATION_MARKER}\nbash: command not found"
    for a, b, expected in ((near, far, "A"), (far, near, "B")):
        content = _content(_post(server, [{"role": "user", "content": _pair_user(a, b, truth)}]))
        assert parse_choice(content) == expected
    assert [e["mode"] for e in _admin(server, "/_mock/requests")] == ["reference", "reference"]


def test_malformed_choice_replies_have_no_boxed_answer(data_dir: Path, samples: list[BenchSample]) -> None:
    truth = samples[0].ground_truth
    with run_mock_server(MockConfig(data=[data_dir], malformed_judge_rate=1.0)) as url:
        content = _content(_post(url, [{"role": "user", "content": _pair_user(truth, "x")}]))
    assert parse_choice(content) is None


# -- failure injection, thinking, truncation, latency --------------------------------------------


def test_errors_and_rate_limits_are_seeded_per_request(data_dir: Path, samples: list[BenchSample]) -> None:
    config = MockConfig(data=[data_dir], error_rate=0.3, rate_limit_rate=0.3, seed=5)
    with run_mock_server(config) as url:
        runs = []
        for _ in range(2):
            statuses = [_post(url, _wire(s.messages())) for s in samples]
            runs.append([r.status_code for r in statuses])
            for r in statuses:
                if r.status_code == 429:
                    assert r.headers["retry-after"] == "0"
                    assert r.json()["error"]["type"] == "rate_limit_error"
            httpx.post(url.removesuffix("/v1") + "/_mock/reset")
    assert runs[0] == runs[1]
    assert {200, 429, 500} <= set(runs[0])


def test_thinking_reasoning_field_and_truncation(data_dir: Path, samples: list[BenchSample]) -> None:
    sample = samples[0]
    with run_mock_server(MockConfig(data=[data_dir], thinking=True)) as url:
        content = _content(_post(url, _wire(sample.messages())))
    assert content.startswith("<think>") and parse_prediction(content) == sample.ground_truth.strip()
    with run_mock_server(MockConfig(data=[data_dir], reasoning_field="reasoning_content")) as url:
        message = _post(url, _wire(sample.messages())).json()["choices"][0]["message"]
    assert message["reasoning_content"] and "<think>" not in message["content"]
    with run_mock_server(MockConfig(data=[data_dir], truncate_rate=1.0)) as url:
        choice = _post(url, _wire(sample.messages())).json()["choices"][0]
    assert choice["finish_reason"] == "length" and choice["message"]["content"] == ""


def test_latency_does_not_serialise_concurrent_requests(data_dir: Path, samples: list[BenchSample]) -> None:
    """32 requests with 1 s of latency each are all in flight at the server at once, not queued."""
    async def burst(url: str) -> list[Any]:
        backend = OpenAIBackend(url, "mock", concurrency=32)
        try:
            requests = [ChatRequest(messages=tuple(s.messages())) for s in samples[:32]]
            return list(await asyncio.gather(*(backend.complete(r) for r in requests)))
        finally:
            await backend.aclose()

    with run_mock_server(MockConfig(data=[data_dir], latency_ms=1000)) as url:
        results = asyncio.run(burst(url))
        stats = httpx.get(f"{url.removesuffix('/v1')}/_mock/stats").json()
    assert len(results) == 32 and all(r.latency_s >= 1.0 for r in results)
    assert stats["max_in_flight"] == 32


def test_cli_rejects_bad_options(data_dir: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(serve_app, ["mock", "--data", str(data_dir), "--reasoning-field", "nope"])
    assert result.exit_code == 2 and "reasoning" in result.output
    result = runner.invoke(serve_app, ["mock", "--help"])
    assert result.exit_code == 0 and "--corruption-rate" in result.output

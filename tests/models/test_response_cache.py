"""One response cache for eval and the simulator: the same request is one entry, whoever asked first."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import orjson

from agentworld.domains import DOMAINS
from agentworld.eval.infer import predict
from agentworld.io import atomic_write_jsonl, read_journal
from agentworld.models.base import ChatRequest, ChatResult
from agentworld.models.cache import ResponseCache, response_key
from agentworld.models.scripted import ScriptedBackend
from agentworld.schema import BenchSample, Message
from agentworld.sim import Simulator, StepResult, WorldSpec
from eval_helpers import bench_rows

TOOLS = [{"name": "get_user", "description": "Look up a user.",
          "inputSchema": {"type": "object", "properties": {"user_id": {"type": "string"}}}}]
SPEC = WorldSpec(domain="mcp", tools=TOOLS)
CALL = {"tool_name": "get_user", "arguments": {"user_id": "u1"}}


def wrap(text: str) -> str:
    return f"<predicted_observation>\n{text}\n</predicted_observation>"


def sim_step(model: ScriptedBackend, cache: ResponseCache | None) -> StepResult:
    sim = Simulator(model, ledger=False, cache=cache)
    sim.reset(SPEC, seed=3)
    result = sim.step(CALL)
    sim.close()
    return result


def sample() -> BenchSample:
    return BenchSample.model_validate(bench_rows(1)[0])


def as_eval_request(request: ChatRequest) -> ChatRequest:
    """The request eval would send for the same messages and settings (eval also names its model)."""
    return request.model_copy(update={"model": "configured-name"})


def test_a_sim_cached_answer_is_an_eval_cache_hit(tmp_path: Path) -> None:
    path = tmp_path / "cache.jsonl"
    model = ScriptedBackend([wrap('{"name": "Ada"}')], name="wm")
    cache = ResponseCache(path)
    assert sim_step(model, cache).source == "world_model"
    cache.close()
    silent = ScriptedBackend(name="wm")
    reopened = ResponseCache(tmp_path / "run-cache.jsonl", shared=path)
    row = asyncio.run(predict(sample(), as_eval_request(model.calls[0]), silent, reopened, DOMAINS))
    reopened.close()
    assert silent.calls == [] and reopened.hits == 1
    assert row.prediction == '{"name": "Ada"}' and row.error is None


def test_an_eval_cached_answer_is_a_sim_cache_hit(tmp_path: Path) -> None:
    probe = ScriptedBackend([wrap("probe")], name="wm")
    sim_step(probe, None)
    path = tmp_path / "cache.jsonl"
    cache = ResponseCache(path)
    evaluated = ScriptedBackend([wrap('{"name": "Grace"}')], name="wm")
    asyncio.run(predict(sample(), as_eval_request(probe.calls[0]), evaluated, cache, DOMAINS))
    cache.close()
    assert len(evaluated.calls) == 1
    silent = ScriptedBackend(name="wm")
    result = sim_step(silent, ResponseCache(path))
    assert silent.calls == [] and result.source == "cache" and result.observation == '{"name": "Grace"}'


def test_another_backend_or_setting_is_another_entry() -> None:
    request = ChatRequest(messages=(Message(role="user", content="ls"),), max_tokens=10, temperature=0.0)
    key = response_key("openai:a", request)
    assert key == response_key("openai:a", request.model_copy(update={"model": "informational"}))
    assert key != response_key("openai:b", request)
    assert key != response_key("openai:a", request, attempt=1)
    for change in ({"seed": 1}, {"temperature": 0.5}, {"max_tokens": 11}, {"extra": {"top_p": 0.9}}):
        assert key != response_key("openai:a", request.model_copy(update=change)), change


def test_files_keyed_the_old_ways_still_answer(tmp_path: Path) -> None:
    request = ChatRequest(messages=(Message(role="user", content="ls"),), model="m", max_tokens=10,
                          temperature=0.0, seed=4)
    old_sim = {"messages": [["user", "ls"]], "settings": {"model": "wm", "max_tokens": 10, "temperature": 0.0,
                                                          "extra": {}}, "seed": 4}
    old_sim_key = hashlib.sha256(orjson.dumps(old_sim, option=orjson.OPT_SORT_KEYS)).hexdigest()
    def row(key: str, text: str) -> dict[str, object]:
        return {"key": key, "result": ChatResult(content=text).model_dump(mode="json")}

    atomic_write_jsonl(tmp_path / "eval.jsonl", [row(f"{request.key()}#1", "from eval")])
    atomic_write_jsonl(tmp_path / "sim.jsonl", [row(old_sim_key, "from sim")])
    silent = ScriptedBackend(name="wm")
    old_eval = ResponseCache(tmp_path / "eval.jsonl")
    assert asyncio.run(old_eval.call(silent, request, attempt=1)).result.content == "from eval"
    old_sim_cache = ResponseCache(tmp_path / "sim.jsonl")
    assert asyncio.run(old_sim_cache.call(silent, request)).result.content == "from sim"
    assert silent.calls == []
    old_eval.close()
    old_sim_cache.close()


def test_simulators_on_their_own_event_loops_share_one_cache_file(tmp_path: Path) -> None:
    path = tmp_path / "cache.jsonl"
    cache = ResponseCache(path)
    for seed in range(3):
        sim = Simulator(ScriptedBackend([wrap(f"answer {seed}")], name="wm"), ledger=False, cache=cache)
        sim.reset(SPEC, seed=seed)
        assert sim.step(CALL).source == "world_model"
        sim.close()
    cache.close()
    rows = list(read_journal(path))
    assert len(rows) == 3 and len({r["key"] for r in rows}) == 3

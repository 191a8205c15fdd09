"""Adapters (TRL, Gymnasium, OpenEnv) and the environment checker, on scripted world models."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
from typing import Any

import pytest

from agentworld.errors import AgentWorldError
from agentworld.models.scripted import ScriptedBackend
from agentworld.serve.adapters import UNSET, environment_rewards, make_trl_environment
from agentworld.serve.adapters.openenv import EpisodeCore, make_openenv_environment
from agentworld.serve.check import EnvCheckError, check_env
from agentworld.sim import ControlSpec, FaultRule, Simulator, WorldSpec

TOOLS: list[dict[str, Any]] = [
    {"name": "read_file", "description": "Read a text file from the workspace.",
     "inputSchema": {"type": "object", "required": ["path"], "properties": {
         "path": {"type": "string", "description": "Path relative to the workspace root."},
         "limit": {"type": "integer", "description": "Largest number of lines to return."},
         "encoding": {"type": "string", "enum": ["utf-8", "latin-1"], "description": "Text encoding."}}}},
    {"name": "search", "description": "Search the web.",
     "inputSchema": {"type": "object", "required": ["query"], "properties": {
         "query": {"type": "string", "description": "What to look for."},
         "tags": {"type": "array", "items": {"type": "string"}, "description": "Filter tags."},
         "exact": {"type": "boolean"}, "score": {"type": "number", "description": "Minimum score."},
         "filters": {"type": "object", "description": "Extra filters."}}}},
]


def reply(text: str) -> str:
    return f"<predicted_observation>\n{text}\n</predicted_observation>"


def echo_model() -> ScriptedBackend:
    """Answers each call with the action text it was sent, so trajectories depend only on actions."""
    def answer(request: Any) -> str:
        return reply("result of " + request.messages[-1].content.split("```json")[-1].strip("` \n"))

    return ScriptedBackend(default=answer)


MCP_SPEC = WorldSpec(domain="mcp", tools=TOOLS, controls=ControlSpec(
    faults=[FaultRule(kind="server_error", rate=0.5, tools=["search"])]))


# -- TRL -----------------------------------------------------------------------------------------


def test_trl_methods_have_real_signatures_and_google_docstrings() -> None:
    env_cls = make_trl_environment(TOOLS, model=echo_model)
    sig = inspect.signature(env_cls().read_file)
    assert list(sig.parameters) == ["path", "limit", "encoding"]
    assert sig.parameters["path"].annotation is str
    assert sig.parameters["path"].default is inspect.Parameter.empty
    assert sig.parameters["limit"].annotation is int and sig.parameters["limit"].default is UNSET
    assert sig.return_annotation is str
    search = inspect.signature(env_cls.search).parameters
    types = [search[n].annotation for n in ("tags", "exact", "score", "filters")]
    assert types == [list[str], bool, float, dict]
    doc = inspect.getdoc(env_cls.read_file) or ""
    assert doc.startswith("Read a text file from the workspace.\n\nArgs:\n")
    assert "    path: Path relative to the workspace root." in doc
    assert '    encoding: Text encoding. (choices: ["utf-8", "latin-1"])' in doc
    assert "    exact: The exact argument." in (inspect.getdoc(env_cls.search) or "")
    public = {n for n, m in inspect.getmembers(env_cls(), inspect.ismethod) if not n.startswith("_")}
    assert public == {"reset", "read_file", "search"}  # TRL turns every public method into a tool


def test_trl_schema_round_trips_through_transformers_get_json_schema() -> None:
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed")
    from transformers.utils import get_json_schema

    env = make_trl_environment(TOOLS, model=echo_model)()
    for tool in TOOLS:
        fn = get_json_schema(getattr(env, tool["name"]))["function"]
        assert fn["name"] == tool["name"] and fn["description"] == tool["description"]
        schema = tool["inputSchema"]
        assert set(fn["parameters"].get("required", [])) == set(schema["required"])
        for name, prop in schema["properties"].items():
            got = fn["parameters"]["properties"][name]
            assert got["type"] == prop["type"] and got.get("enum") == prop.get("enum")
            assert got["description"] == prop.get("description", f"The {name} argument.")


def test_trl_episode_calls_the_simulator_and_returns_error_text() -> None:
    env_cls = make_trl_environment(TOOLS, model=echo_model, spec=MCP_SPEC,
                                   reward=lambda state: float(len(state.history)))
    env = env_cls()
    with pytest.raises(RuntimeError, match="reset"):
        env.read_file(path="a.txt")
    assert env.reset(prompt=[{"role": "user", "content": "hi"}], seed=3) is None
    out = env.read_file(path="a.txt", limit=2)
    assert out.startswith("result of") and '"limit": 2' in out and "encoding" not in out
    assert env.results[-1].source == "world_model"
    assert env.read_file(path=7).startswith("Error:")  # schema violation → error text, no exception
    with pytest.raises(TypeError, match=r"missing a required argument: .path."):
        env.read_file()
    assert env.get_reward() == 2.0
    assert environment_rewards(["a"], environments=[env]) == [2.0]
    with pytest.raises(ValueError, match="cannot be a method"):
        make_trl_environment([{"name": "reset"}], model=None)
    with pytest.raises(ValueError, match="not a valid Python parameter"):
        make_trl_environment([{"name": "f", "inputSchema": {"properties": {"from": {}}}}], model=None)


def test_trl_async_methods_for_concurrent_rollouts() -> None:
    env = make_trl_environment(TOOLS, model=echo_model, asynchronous=True)()
    env.reset()
    assert inspect.iscoroutinefunction(env.read_file)

    async def both() -> list[str]:
        return list(await asyncio.gather(env.read_file(path="a"), env.search(query="q")))

    assert all(text.startswith("result of") for text in asyncio.run(both()))


# -- the checker on the Simulator, the Gym env and the TRL class -------------------------------------------


MCP_ACTIONS: list[Any] = [{"tool_name": "read_file", "arguments": {"path": "x"}},
                          {"tool_name": "search", "arguments": {"query": "q"}},
                          {"tool_name": "search", "arguments": {"query": "r"}},
                          {"tool_name": "read_file", "arguments": {"path": 1}}]


def test_check_env_on_the_simulator() -> None:
    report = check_env(lambda: Simulator(echo_model()), MCP_ACTIONS, seed=1, other_seed=2, spec=MCP_SPEC)
    assert report.kind == "simulator" and report.steps == 4
    assert report.trajectory[-1][1] == "template"  # invalid arguments answered without the model


def test_check_env_on_the_trl_class() -> None:
    env_cls = make_trl_environment(TOOLS, model=echo_model, spec=MCP_SPEC)
    calls = [(a["tool_name"], a["arguments"]) for a in MCP_ACTIONS]
    assert check_env(env_cls, calls, seed=5).kind == "trl"


def test_check_env_catches_nondeterminism() -> None:
    counter = iter(range(1000))

    def flaky() -> Simulator:
        return Simulator(ScriptedBackend(default=lambda req: reply(f"call {next(counter)}")))

    with pytest.raises(EnvCheckError, match="not deterministic"):
        check_env(flaky, MCP_ACTIONS[:1], spec=MCP_SPEC)


def make_gym(max_turns: int = 3) -> Any:
    pytest.importorskip("gymnasium")
    from agentworld.serve.adapters.gym import SimEnv

    return SimEnv(Simulator(echo_model()), MCP_SPEC, max_turns=max_turns,
                  reward_fn=lambda result, sim: 0.0 if result.is_error else 1.0)


def test_gym_env_contract() -> None:
    env = make_gym()
    import gymnasium

    with pytest.raises(gymnasium.error.ResetNeeded, match="reset"):
        env.step(MCP_ACTIONS[0])
    obs, info = env.reset(seed=4)
    assert "read_file" in obs and info["seed"] == 4
    obs, reward, terminated, truncated, info = env.step(MCP_ACTIONS[0])
    assert (reward, terminated, truncated, info["source"]) == (1.0, False, False, "world_model")
    assert set(info) >= {"source", "fault", "usage", "turn"}
    obs, reward, *_, info = env.step("not json")
    assert obs.startswith("Error:") and info["action_error"]
    *_, truncated, _ = env.step(MCP_ACTIONS[1])
    assert truncated
    with pytest.raises(gymnasium.error.ResetNeeded, match="reset"):
        env.step(MCP_ACTIONS[0])
    env.close()


def test_gym_env_passes_check_env_and_gymnasium_checker() -> None:
    pytest.importorskip("gymnasium")
    from gymnasium.utils.env_checker import check_env as gym_check_env

    report = check_env(make_gym, MCP_ACTIONS, seed=9, other_seed=10)
    assert report.kind == "gymnasium" and report.steps == 3  # truncated at max_turns, then step raises
    gym_check_env(make_gym(), skip_render_check=True)


# -- OpenEnv ---------------------------------------------------------------------------------------------


def test_openenv_core_without_openenv() -> None:
    core = EpisodeCore(Simulator(echo_model()), MCP_SPEC, max_turns=2)
    with pytest.raises(AgentWorldError, match="reset"):
        core.check_step()
    spec, seed = core.start(7, "ep-1", {"spec": MCP_SPEC.model_dump()})
    opened = core.opened(core.simulator.reset(spec, seed=seed), spec)
    assert opened["metadata"] == {"seed": 7, "domain": "mcp", "episode_id": "ep-1"}
    core.check_step()
    first = core.stepped(core.simulator.step(MCP_ACTIONS[0]))
    assert (first["source"], first["done"], first["turn"]) == ("world_model", False, 1)
    core.check_step()
    from agentworld.sim import ActionError

    second = core.stepped(ActionError("bad action"))
    assert second["done"] and second["text"] == "Error: bad action"
    if importlib.util.find_spec("openenv") is None:
        with pytest.raises(AgentWorldError, match="separate virtual environment"):
            make_openenv_environment(lambda: Simulator(echo_model()))


def test_openenv_environment_and_app() -> None:
    if importlib.util.find_spec("openenv") is None:
        pytest.skip("openenv is not installed (it needs its own venv: mcp<2)")
    from agentworld.serve.adapters.openenv import create_openenv_app

    classes = make_openenv_environment(lambda: Simulator(echo_model()), MCP_SPEC, max_turns=2)
    env = classes["environment"]()
    obs = env.reset(seed=3, episode_id="e")
    assert obs.turn == 0 and "read_file" in obs.text
    obs = env.step(classes["action"](action=MCP_ACTIONS[0]))
    assert obs.source == "world_model" and not obs.done and env.state.step_count == 1
    obs = asyncio.run(env.step_async(classes["action"](action="not json")))
    assert obs.done and obs.text.startswith("Error:")
    from fastapi.testclient import TestClient

    client = TestClient(create_openenv_app(lambda: Simulator(echo_model()), MCP_SPEC))
    with client.websocket_connect("/ws") as ws:  # OpenEnv keeps an episode per WebSocket session
        ws.send_json({"type": "reset", "data": {"seed": 1}})
        assert ws.receive_json()["data"]["observation"]["turn"] == 0
        ws.send_json({"type": "step", "data": {"action": MCP_ACTIONS[0]}})
        step = ws.receive_json()["data"]
        assert step["observation"]["source"] == "world_model"
        assert step["observation"]["text"].startswith("result")

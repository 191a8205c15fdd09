"""The verifiers environment package (environments/agentworld_sim): verifiers' own loader and rollout code.

The agent is a scripted OpenAI-compatible endpoint on 127.0.0.1 (native tool calls, driven by verifiers'
OpenAI client); the world model is the mock server, or a ScriptedBackend where the rule check needs
entity state in the observations.
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import json
import threading
import tomllib
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentworld.errors import AgentWorldError, BackendError, DataError
from agentworld.models.scripted import ScriptedBackend
from agentworld.serve.mock_server import MockConfig, run_mock_server
from agentworld.train.verifiers_env import dataset_rows, tool_defs
from agentworld.train.verifiers_env import load_environment as direct_load
from serving import chat_server

PACKAGE = Path(__file__).parents[2] / "environments" / "agentworld_sim"
TOOLS = [{"name": "cancel_booking", "description": "Cancel a booking.",
          "inputSchema": {"type": "object", "properties": {"booking_id": {"type": "string"}},
                          "required": ["booking_id"]}}]
WORLD_JSON = {"version": 1, "name": "bookings", "domain": "mcp",
              "scenario": {"service": "bookings", "description": "A booking service."},
              "tools": TOOLS, "initial_state": {"entities": {"booking": {"B1": {"status": "active"}}}}}
CALLED_B1 = {"tool": "cancel_booking", "arguments": {"booking_id": "B1"}, "op": "called"}
STATE_B1 = {"kind": "booking", "id": "B1", "field": "status", "op": "eq", "value": "cancelled"}
TASKS = [{"id": "trace", "instruction": "Cancel booking B1.", "success": {"trace": [CALLED_B1]}},
         {"id": "state", "instruction": "Cancel booking B1.",
          "success": {"state": [STATE_B1], "trace": [CALLED_B1]}}]
CONTROLS = {"denied": "faults:\n  - kind: permission_denied\n    rate: 1.0\n"}


def _world(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "world.json").write_text(json.dumps(WORLD_JSON))
    (root / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    (root / "controls").mkdir()
    for name, text in CONTROLS.items():
        (root / "controls" / f"{name}.yaml").write_text(text)
    return root


class Agent:
    """Each rollout's first turn cancels B1 or (every other rollout) B2; after a tool result it stops."""

    def __init__(self) -> None:
        self.first_turns = itertools.count()
        self.lock = threading.Lock()
        self.tools_seen: list[list[str]] = []

    def __call__(self, path: str, body: dict[str, Any], headers: Any) -> str | dict[str, Any]:
        with self.lock:
            self.tools_seen.append([t["function"]["name"] for t in body.get("tools") or []])
            if any(m["role"] == "tool" for m in body["messages"]):
                return "Done: the booking is cancelled."
            n = next(self.first_turns)
        args = json.dumps({"booking_id": "B1" if n % 2 == 0 else "B2"})
        return {"role": "assistant", "content": None,
                "tool_calls": [{"id": f"call-{n}", "type": "function",
                                "function": {"name": "cancel_booking", "arguments": args}}]}


def _client(url: str) -> Any:
    from verifiers.clients import OpenAIChatCompletionsClient
    from verifiers.types import ClientConfig

    config = ClientConfig(api_base_url=f"{url}/v1", api_key_var="AGENTWORLD_TEST_NO_KEY", max_retries=0)
    return OpenAIChatCompletionsClient(config)


def _group(env: Any, row: int, client: Any, n: int = 8) -> list[Any]:
    dataset = env.get_dataset()
    inputs = [{**dataset[row], "example_id": row} for _ in range(n)]
    return asyncio.run(env.run_group(inputs, client, "agent", {}))


# -- without verifiers: the package's contract -----------------------------------------------------

def test_package_is_the_module_verifiers_imports_for_the_env_id() -> None:
    meta = tomllib.loads((PACKAGE / "pyproject.toml").read_text())
    module = meta["project"]["name"].replace("-", "_")  # verifiers' env_module_name
    assert module == "agentworld_sim" and meta["tool"]["hatch"]["build"]["include"] == [f"{module}.py"]
    spec = importlib.util.spec_from_file_location(module, PACKAGE / f"{module}.py")
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    assert loaded.load_environment is direct_load


def test_rows_carry_world_task_controls_and_seed(tmp_path: Path) -> None:
    world = _world(tmp_path / "w")
    rows = dataset_rows([world], controls=["clean", "denied"], seed=7)
    assert [(r["info"]["task_id"], r["info"]["controls"], r["info"]["seed"]) for r in rows] == [
        ("trace", "clean", 7), ("state", "clean", 8), ("trace", "denied", 9), ("state", "denied", 10)]
    assert rows[0]["info"]["world"] == str(world)
    user = rows[0]["prompt"][1]["content"]
    assert user.startswith("Cancel booking B1.") and '"B1"' in user  # the initial entities
    with pytest.raises(DataError, match="unknown control spec 'flaky'"):
        dataset_rows([world], controls=["flaky"])


def test_tools_are_the_worlds_mcp_tools() -> None:
    from agentworld.domains.spec import WorldSpec

    assert tool_defs(WorldSpec(tools=TOOLS)) == [
        {"name": "cancel_booking", "description": "Cancel a booking.", "parameters": TOOLS[0]["inputSchema"]}]


def test_load_environment_without_a_world_says_what_to_pass() -> None:
    with pytest.raises(AgentWorldError, match="pass world=<folder>"):
        direct_load()


# -- with verifiers: its loader and its rollout-group code ------------------------------------------

@pytest.mark.extra("verifiers")
def test_vf_loads_the_package_and_runs_a_group_of_8_against_the_mock(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import verifiers as vf
    monkeypatch.syspath_prepend(str(PACKAGE))
    world, agent = _world(tmp_path / "w"), Agent()
    with run_mock_server(MockConfig()) as mock_url, chat_server(agent) as agent_url:
        env = vf.load_environment("agentworld-sim", world=str(world), model_base_url=mock_url, model="mock")
        assert isinstance(env, vf.Environment) and env.env_id == "agentworld-sim"
        outputs = _group(env, 0, _client(agent_url))
        stats = httpx.get(mock_url.removesuffix("/v1") + "/_mock/stats").json()
        inputs = [{**env.get_dataset()[0], "example_id": 0}] * 8  # the same group through env.generate
        quiet = {"on_progress": lambda *a: None}
        generated = asyncio.run(env.generate(inputs, _client(agent_url), "agent", **quiet))
    assert sorted(o["reward"] for o in generated["outputs"]) == [0.0] * 4 + [1.0] * 4
    assert generated["metadata"]["avg_reward"] == 0.5
    assert len(outputs) == 8 and all(o["error"] is None for o in outputs)
    # the "trace" task: the 4 rollouts that cancelled B1 pass, the 4 that cancelled B2 do not
    assert sorted(o["reward"] for o in outputs) == [0.0] * 4 + [1.0] * 4
    assert all(o["metrics"]["sim_turns"] == 1.0 for o in outputs)
    assert stats["world"] == 8  # one simulated tool call per rollout, each in its own session
    assert all(seen == ["cancel_booking"] for seen in agent.tools_seen)
    tool_replies = [m for o in outputs for m in o["completion"] if m["role"] == "tool"]
    assert len(tool_replies) == 8
    assert all("Command completed successfully." in m["content"] for m in tool_replies)


@pytest.mark.extra("verifiers")
def test_each_event_loop_gets_its_own_world_model_client(tmp_path: Path) -> None:
    """verifiers' callers may run each batch in a new loop (generate_sync, vf-eval): the world model's
    HTTP client of the first loop must not be reused in the second ("Event loop is closed")."""
    world = _world(tmp_path / "w")
    with run_mock_server(MockConfig()) as mock_url, chat_server(Agent()) as agent_url:
        env = direct_load(str(world), model_base_url=mock_url, model="mock")
        first, second = (_group(env, 0, _client(agent_url), n=2) for _ in range(2))
    assert all(o["error"] is None for o in first + second)
    assert sorted(o["reward"] for o in first) == sorted(o["reward"] for o in second) == [0.0, 1.0]


@pytest.mark.extra("verifiers")
def test_a_failing_world_model_ends_its_rollouts_with_an_error_not_the_group(tmp_path: Path) -> None:
    down = ScriptedBackend(default=BackendError("HTTP 503 after 3 attempts", retryable=True))
    env = direct_load(str(_world(tmp_path / "w")), world_model=down)
    with chat_server(Agent()) as agent_url:
        outputs = _group(env, 0, _client(agent_url), n=2)
    assert [o["reward"] for o in outputs] == [0.0, 0.0]
    assert all("the world model failed: HTTP 503" in json.dumps(o["error"]) for o in outputs)


@pytest.mark.extra("verifiers")
def test_rule_check_reads_the_final_state_and_the_rows_controls(tmp_path: Path) -> None:
    world = _world(tmp_path / "w")
    shown = '<predicted_observation>{"booking_id": "B1", "status": "cancelled"}</predicted_observation>'
    env = direct_load(str(world), controls=["clean", "denied"], world_model=ScriptedBackend(default=shown))
    with chat_server(Agent()) as agent_url:
        clean = _group(env, 1, _client(agent_url), n=2)  # the "state" task, clean
    with chat_server(Agent()) as agent_url:
        denied = _group(env, 3, _client(agent_url), n=2)  # the "state" task, every call refused
    assert sorted(o["reward"] for o in clean) == [0.0, 1.0]
    assert [o["reward"] for o in denied] == [0.0, 0.0]
    assert all(o["metrics"]["faults"] == 1.0 for o in denied)
    assert all(o["metrics"]["faults"] == 0.0 for o in clean)


# -- mode=world-model: the policy is the world model, scored by the rule or the hybrid reward ----------

def _world_model_policy(path: str, body: dict[str, Any], headers: Any) -> str:
    """Predicts the echoed token (the truth) for rollouts of t0-1, a wrong observation for t0-2."""
    action = body["messages"][-1]["content"]
    token = action.split("echo ")[1].split("\\n")[0]
    if token.endswith("-0"):
        observation = f"**Environment Observation:**\n{token}\nroot@box:/app#"
    else:  # nothing like the truth (the mock judge scores by similarity: a shared prompt line scores ~0.7)
        observation = "**Environment Observation:**\nSegmentation fault (core dumped)"
    return f"<predicted_observation>{observation}</predicted_observation>"


@pytest.mark.extra("verifiers")
@pytest.mark.parametrize("reward", ["rule", "hybrid"])
def test_world_model_mode_scores_predictions_with_rule_or_hybrid_reward(tmp_path: Path, reward: str) -> None:
    from eval_helpers import bench_rows, write_bench

    data = write_bench(tmp_path / "data", bench_rows(1, turns=2))
    with run_mock_server(MockConfig()) as judge_url, chat_server(_world_model_policy) as policy_url:
        env = direct_load(mode="world-model", data=str(data), reward=reward, judge="judge",
                          judge_base_url=judge_url)
        right, wrong = _group(env, 0, _client(policy_url), n=2), _group(env, 1, _client(policy_url), n=2)
        judged = httpx.get(judge_url.removesuffix("/v1") + "/_mock/stats").json().get("judge", 0)
    assert judged == (4 if reward == "hybrid" else 0)
    assert [o["reward"] for o in right] == [1.0, 1.0]  # the truth: full rubric (mock judge) and rule
    assert all(o["reward"] < 0.5 for o in wrong)
    if reward == "rule":
        assert [o["reward"] for o in wrong] == [0.0, 0.0]


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(AgentWorldError, match="unknown mode 'critic'"):
        direct_load("w", mode="critic")

"""Sim RL rollouts: faults recorded per step under a rising curriculum; exports; one TRL GRPO step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.models.base import ChatRequest
from agentworld.models.scripted import ScriptedBackend
from agentworld.serve.adapters import trl_dataset_rows, trl_environment
from agentworld.sim.agent import parse_agent_action
from agentworld.sim.curriculum import Curriculum
from agentworld.sim.session import Simulator
from agentworld.sim.types import SessionState, StepResult, WorldSpec
from agentworld.train.rollout import (
    episode_rl_rows,
    run_rollouts,
    trajectory_rows,
    write_episodes,
)
from serving import chat_server

TOOLS = [{"name": "get_weather", "description": "Weather for a city.",
          "inputSchema": {"type": "object",
                          "properties": {"city": {"type": "string", "description": "City."}},
                          "required": ["city"]}}]
SPEC = WorldSpec(domain="mcp", tools=TOOLS)
WORLD = '<predicted_observation>{"city": "Oslo", "temp_c": 3}</predicted_observation>'


def _agent(request: ChatRequest) -> str:
    return 'I will look.\n{"tool_name": "get_weather", "arguments": {"city": "Oslo"}}'


def _calls(state: SessionState) -> float:
    return float(len(state.history))


def test_fault_curriculum_recorded_per_step(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[StepResult] = []
    original = Simulator.astep

    async def spy(self: Simulator, action: Any) -> StepResult:
        result = await original(self, action)
        seen.append(result)
        return result

    monkeypatch.setattr(Simulator, "astep", spy)
    curriculum = Curriculum(fault_kinds=["server_error", "timeout"], rate_start=0.0, rate_end=0.8,
                            facts=[["Oslo is always sunny."]])
    agent, world = ScriptedBackend(default=_agent), ScriptedBackend(default=WORLD)
    episodes = list(run_rollouts(agent, world, SPEC, curriculum, episodes=5, max_turns=12,
                                 task="weather in Oslo", task_reward=_calls))
    assert [e.fault_rate for e in episodes] == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8])
    turns = [t for e in episodes for t in e.trajectory.turns]
    assert len(turns) == len(seen) == 60
    assert [t.meta["fault"] for t in turns] == [r.fault.kind if r.fault else None for r in seen]
    assert [t.meta["source"] for t in turns] == [r.source for r in seen]
    assert [t.meta["is_error"] for t in turns] == [r.is_error for r in seen]
    kinds = {t.meta["fault"] for t in turns} - {None}
    assert kinds == {"server_error", "timeout"}
    rates = [sum(t.meta["fault"] is not None for t in e.trajectory.turns) / 12 for e in episodes]
    assert rates[0] == 0.0 and rates[-1] > 0.3
    assert sum(rates[3:]) / 2 > sum(rates[:2]) / 2
    assert episodes[0].reward == 12.0 and episodes[0].trajectory.turns[-1].meta["reward"] == 12.0
    assert episodes[0].trajectory.meta["facts"] == ["Oslo is always sunny."]

    assert write_episodes(tmp_path / "eps.jsonl", episodes) == 5
    first = json.loads((tmp_path / "eps.jsonl").read_text().splitlines()[0])
    assert first["domain"] == "mcp" and len(first["turns"]) == 12
    rows = list(episode_rl_rows(episodes))
    assert len(rows) == 60 and set(rows[0]) >= {"prompt", "completion", "reward"}
    assert rows[1]["prompt"][-1]["content"] == episodes[0].trajectory.turns[0].observation
    traj = list(trajectory_rows(episodes))
    assert len(traj[0]["rewards"]) == 12 and traj[0]["rewards"][-1] == 12.0


def test_agent_parse_and_done() -> None:
    assert parse_agent_action('x {"name": "a", "arguments": {"b": 1}}', "mcp") == {
        "tool_name": "a", "arguments": {"b": 1}}
    assert parse_agent_action('<think>{"tool_name": "no"}</think>[{"keystrokes": "ls\\n"}]', "terminal") == [
        {"keystrokes": "ls\n"}]
    assert parse_agent_action("All finished. DONE", "mcp") is None
    agent = ScriptedBackend(["not json", 'DONE'])
    world = ScriptedBackend(default=WORLD)
    (episode,) = run_rollouts(agent, world, SPEC, Curriculum(), episodes=1, max_turns=5)
    assert episode.done and len(episode.trajectory.turns) == 1
    assert episode.trajectory.turns[0].meta["source"] == "agent_error"


def test_trl_environment_factory_one_grpo_step(tmp_path: Path) -> None:
    trl = pytest.importorskip("trl")
    transformers = pytest.importorskip("transformers")
    datasets = pytest.importorskip("datasets")
    from trl.chat_template_utils import qwen2_5_chat_template

    from agentworld.serve.adapters.trl import environment_rewards
    from agentworld.train.tiny import build_tiny

    model_dir = build_tiny(tmp_path / "tiny")
    # TRL needs a template that renders tool calls and that it knows how to parse responses of;
    # the tiny model's plain ChatML does neither, so use Qwen2.5's (same ChatML framing).
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    tokenizer.chat_template = qwen2_5_chat_template
    tokenizer.save_pretrained(model_dir)
    curriculum = Curriculum(fault_kinds=["server_error"], rate_start=0.0, rate_end=0.5)
    env_class = trl_environment(SPEC, lambda: ScriptedBackend(default=WORLD), task_reward=_calls)
    rows = trl_dataset_rows(SPEC, curriculum, episodes=2, task="What is the weather in Oslo?")
    assert json.loads(rows[1]["spec"])["controls"]["faults"][0]["rate"] == 0.5
    trainer = trl.GRPOTrainer(
        model=str(model_dir), reward_funcs=environment_rewards,
        train_dataset=datasets.Dataset.from_list(rows),
        args=trl.GRPOConfig(max_steps=1, use_cpu=True, bf16=False, gradient_checkpointing=False,
                            num_generations=2, per_device_train_batch_size=2, max_completion_length=16,
                            report_to=[],
                            output_dir=str(tmp_path / "out")),
        environment_factory=env_class)
    output = trainer.train()
    assert output.global_step == 1


def test_rollout_command_sends_each_endpoint_its_own_key(tmp_path: Path) -> None:
    """`train rollout`: the agent's key goes to the agent endpoint only, the world model's to the world
    model (one key used to be sent to both)."""
    from typer.testing import CliRunner

    from agentworld.cli import app

    seen: list[tuple[str, str]] = []

    def answer(path: str, body: dict[str, Any], headers: Any) -> str:
        seen.append((path.split("/")[1], headers.get("Authorization", "")))
        if path.startswith("/agent/"):
            return _agent(None) if len(body["messages"]) <= 2 else "All done."  # type: ignore[arg-type]
        return WORLD

    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"tools": TOOLS}))
    out = tmp_path / "episodes.jsonl"
    with chat_server(answer) as url:
        result = CliRunner().invoke(app, [
            "train", "rollout", "--tools", str(tools), "--out", str(out), "--episodes", "2",
            "--max-turns", "3",
            "--agent-base-url", f"{url}/agent/v1", "--agent-model", "agent",
            "--model-base-url", f"{url}/world/v1", "--model", "world"],
            env={"AGENTWORLD_AGENT_API_KEY": "agent-key-1", "AGENTWORLD_MODEL_API_KEY": "world-key-2",
                 "OPENAI_API_KEY": ""})
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.strip().splitlines()[-1])["episodes"] == 2
    assert {path for path, _ in seen} == {"agent", "world"}
    for path, auth in seen:
        assert auth == ("Bearer agent-key-1" if path == "agent" else "Bearer world-key-2"), (path, auth)
    assert out.exists() and out.with_suffix(".rl.jsonl").exists()

"""Perturbation curricula: a world folder's controls/*.yaml, swept by `train rollout --sweep-controls`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.errors import DataError
from agentworld.models.base import ChatRequest
from agentworld.models.scripted import ScriptedBackend
from agentworld.train.rollout import NO_TOOL
from agentworld.train.sweep import load_world_tasks, sweep_controls
from serving import chat_server

TOOLS = [{"name": "cancel_booking", "description": "Cancel a booking.",
          "inputSchema": {"type": "object", "properties": {"booking_id": {"type": "string"}},
                          "required": ["booking_id"]}}]
WORLD_JSON = {"version": 1, "name": "bookings", "domain": "mcp",
              "scenario": {"service": "bookings", "description": "A booking service.", "users": ["traveller"],
                           "failure_modes": ["the server is flaky"]},
              "tools": TOOLS,
              "initial_state": {"entities": {"booking": {"B1": {"status": "active"}}}}}
TASK = {"id": "t1", "instruction": "Cancel booking B1.",
        "success": {"state": [{"kind": "booking", "id": "B1", "field": "status", "op": "eq",
                               "value": "cancelled"}],
                    "trace": [{"tool": "cancel_booking", "arguments": {"booking_id": "B1"}, "op": "called"}]},
        "reference_plan": [{"tool": "cancel_booking", "arguments": {"booking_id": "B1"}}]}
CONTROLS = {
    # the first call fails with a 503: the agent retries and still succeeds, one turn later
    "intermittent": "faults:\n  - kind: server_error\n    schedule: [1]\n",
    # every call is refused: the task cannot succeed
    "denied": "faults:\n  - kind: permission_denied\n    rate: 1.0\n",
}
RESULT = '{"booking_id": "B1", "status": "cancelled"}'
CALL = '{"tool_name": "cancel_booking", "arguments": {"booking_id": "B1"}}'


def _world_dir(root: Path, controls: dict[str, str] = CONTROLS) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "world.json").write_text(json.dumps(WORLD_JSON))
    (root / "tasks.jsonl").write_text(json.dumps(TASK) + "\n")
    if controls:
        (root / "controls").mkdir()
        for name, text in controls.items():
            (root / "controls" / f"{name}.yaml").write_text(text)
    return root


def agent_reply(last_user: str) -> str:
    """Call the tool until a result shows the booking cancelled, then say DONE."""
    return "DONE" if '"cancelled"' in last_user else f"Cancelling.\n{CALL}"


def _agent(request: ChatRequest) -> str:
    return agent_reply(request.messages[-1].content)


def test_sweep_runs_each_control_spec_with_the_same_seeds_and_tasks(tmp_path: Path) -> None:
    world, spec, tasks = load_world_tasks(_world_dir(tmp_path / "w"))
    world_model = ScriptedBackend(default=f"<predicted_observation>{RESULT}</predicted_observation>")
    rows = sweep_controls(ScriptedBackend(default=_agent), world_model, spec, sorted(world.controls.items()),
                          tasks, episodes=2, max_turns=4)
    by_name = {row.controls: (row, episodes) for row, episodes in rows}
    assert [row.controls for row, _ in rows] == ["clean", "denied", "intermittent"]

    clean, clean_eps = by_name["clean"]
    assert (clean.success_rate, clean.done_rate, clean.mean_reward, clean.faults) == (1.0, 1.0, 1.0, {})
    assert clean.mean_turns == 1  # one call; DONE ends the episode without a turn
    assert [e.seed for e in clean_eps] == [0, 1]

    flaky, flaky_eps = by_name["intermittent"]
    assert (flaky.success_rate, flaky.faults, flaky.fault_turns, flaky.mean_turns) == (
        1.0, {"server_error": 2}, 2, 2)
    first = flaky_eps[0].trajectory
    assert [t.meta["fault"] for t in first.turns] == ["server_error", None]
    assert first.meta["controls"] == "intermittent" and first.meta["task_id"] == "t1"
    assert [e.seed for e in flaky_eps] == [0, 1]

    denied, denied_eps = by_name["denied"]
    assert (denied.success_rate, denied.done_rate, denied.mean_reward) == (0.0, 0.0, 0.0)
    assert denied.faults == {"permission_denied": 8} and denied.mean_turns == 4
    assert denied_eps[0].trajectory.meta["failed_conditions"] == [  # a refused call was not made
        "booking B1 field 'status' is \"active\", wanted eq \"cancelled\"",
        'no call cancel_booking({"booking_id": "B1"})']


def test_a_control_spec_named_clean_is_refused(tmp_path: Path) -> None:
    root = _world_dir(tmp_path / "w", {"clean": "faults: []\n"})
    with pytest.raises(DataError, match=r"clean\.yaml: 'clean' names the row without controls"):
        load_world_tasks(root)


@pytest.fixture
def endpoints() -> Iterator[str]:
    """One HTTP server: /agent/v1 answers as the scripted agent, /world/v1 as the world model."""

    def answer(path: str, body: dict[str, Any], _headers: Any) -> str:
        if path.startswith("/agent/"):
            return agent_reply(body["messages"][-1]["content"])
        return f"<predicted_observation>{RESULT}</predicted_observation>"

    with chat_server(answer) as url:
        yield url


def _rollout(url: str, *args: str) -> Any:
    return CliRunner().invoke(app, ["train", "rollout", *args, "--agent-base-url", f"{url}/agent/v1",
                                    "--agent-model", "agent", "--model-base-url", f"{url}/world/v1",
                                    "--model", "world"],
                              env={"AGENTWORLD_AGENT_API_KEY": "a", "AGENTWORLD_MODEL_API_KEY": "w"})


def test_rollout_command_sweeps_a_world_folders_controls(tmp_path: Path, endpoints: str) -> None:
    root = _world_dir(tmp_path / "w")
    out = tmp_path / "eps.jsonl"
    result = _rollout(endpoints, "--world", str(root), "--sweep-controls", "--out", str(out),
                      "--episodes", "2", "--max-turns", "3")
    assert result.exit_code == 0, result.output
    printed = [json.loads(line) for line in result.output.strip().splitlines()]
    assert printed == json.loads(out.with_suffix(".sweep.json").read_text())
    assert [(r["controls"], r["success_rate"], r["faults"]) for r in printed] == [
        ("clean", 1.0, {}), ("denied", 0.0, {"permission_denied": 6}),
        ("intermittent", 1.0, {"server_error": 2})]
    episodes = [json.loads(line) for line in out.read_text().splitlines()]
    assert [e["meta"]["controls"] for e in episodes] == ["clean"] * 2 + ["denied"] * 2 + ["intermittent"] * 2
    assert len({e["id"] for e in episodes}) == 6


def test_rollout_command_on_a_world_without_sweep_runs_its_tasks(tmp_path: Path, endpoints: str) -> None:
    out = tmp_path / "eps.jsonl"
    root = _world_dir(tmp_path / "w")
    result = _rollout(endpoints, "--world", str(root), "--out", str(out), "--episodes", "1")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["episodes"] == 1 and summary["mean_reward"] == 1.0 and summary["faults"] == 0


def test_a_world_without_tasks_needs_a_task(tmp_path: Path, endpoints: str) -> None:
    root = _world_dir(tmp_path / "w", {})
    (root / "tasks.jsonl").write_text("")
    out = tmp_path / "eps.jsonl"
    refused = _rollout(endpoints, "--world", str(root), "--out", str(out))
    assert refused.exit_code == 2 and "tasks.jsonl: the world has no task to roll out" in refused.output
    given = _rollout(endpoints, "--world", str(root), "--out", str(out), "--episodes", "1",
                     "--task", "Cancel booking B1.")
    assert given.exit_code == 0, given.output
    assert json.loads(out.read_text().splitlines()[0])["task"] == "Cancel booking B1."


@pytest.mark.parametrize(("args", "message"), [
    (["--tools", "t.json", "--sweep-controls"], "--sweep-controls sweeps a world folder's controls"),
    (["--world", "w", "--tools", "t.json"], "give exactly one of --tools FILE and --world DIR"),
    (["--world", "w", "--fault-kinds", "timeout"], "--fault-kinds is the --tools curriculum"),
    (["--tools", "t.json", "--ray-actors", "2"], "--ray-actors sets the actors of a Ray run: give --ray too"),
])
def test_rollout_option_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = _rollout("http://127.0.0.1:9", *args, "--out", str(tmp_path / "o.jsonl"))
    assert result.exit_code == 2
    assert message in result.output and len(result.output.strip().splitlines()) == 1


def test_a_fault_on_read_tools_the_episode_never_called_says_so_per_episode(tmp_path: Path) -> None:
    """The agent only cancels; a stale-data spec on the world's read tool cannot fire. Its 0 faults are
    reported as "no tool this fault applies to" per episode and per row, not as a silent 0."""
    read = {"name": "get_booking", "description": "Read a booking.",
            "inputSchema": {"type": "object", "properties": {"booking_id": {"type": "string"}}}}
    root = _world_dir(tmp_path / "w", {"stale": "faults:\n  - kind: stale\n    rate: 1.0\n"
                                                "    tools: [get_booking]\n"})
    (root / "world.json").write_text(json.dumps({**WORLD_JSON, "tools": [*TOOLS, read]}))
    world, spec, tasks = load_world_tasks(root)
    world_model = ScriptedBackend(default=f"<predicted_observation>{RESULT}</predicted_observation>")
    rows = sweep_controls(ScriptedBackend(default=_agent), world_model, spec, sorted(world.controls.items()),
                          tasks, episodes=2, max_turns=4)
    by_name = {row.controls: (row, episodes) for row, episodes in rows}
    stale, episodes = by_name["stale"]
    note = f"stale: {NO_TOOL} was called (get_booking)"
    assert [e.trajectory.meta["fault_notes"] for e in episodes] == [[note], [note]]
    assert (stale.faults, stale.fault_notes) == ({}, {note: 2})
    clean, clean_episodes = by_name["clean"]
    assert clean.fault_notes == {} and clean_episodes[0].trajectory.meta["fault_notes"] == []

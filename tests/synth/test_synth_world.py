"""The world folder (version 1): loading with located errors, the final state a plan leaves, the rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.domains.mcp.ledger import open_ledger
from agentworld.errors import DataError
from agentworld.synth.world import (
    Task,
    ToolStep,
    World,
    evaluate,
    final_state,
    load_world,
    save_world,
)
from synth_worlds import TASK, WORLD, write


def test_a_world_folder_loads_and_round_trips(tmp_path: Path) -> None:
    (tmp_path / "controls").mkdir()
    (tmp_path / "controls" / "flaky.yaml").write_text("faults:\n  - {kind: timeout, rate: 0.5}\n")
    world = load_world(write(tmp_path))
    assert world.name == "airline" and [t.name for t in world.tools][:2] == ["get_reservation_details",
                                                                              "cancel_reservation"]
    assert world.tasks[0].reference_plan[0].arguments == {"reservation_id": "R1"}
    assert world.controls["flaky"].faults[0].rate == 0.5
    again = load_world(save_world(world, tmp_path / "copy"))
    assert again == world


@pytest.mark.parametrize(("where", "content", "match"), [
    ("world.json", "{not json", r"world\.json:1: malformed JSON"),
    ("world.json", json.dumps({**WORLD, "version": 2}), r"world\.json, field 'version': .*version 2"),
    ("world.json", json.dumps({**WORLD, "colour": 1}), r"world\.json, field 'colour': Extra inputs"),
    ("world.json", json.dumps({**WORLD, "tools": [{"description": "x"}]}), r"field 'tools\.0\.name'"),
    ("tasks.jsonl", json.dumps(TASK) + "\n" + json.dumps({**TASK, "id": "t2", "success": {"state": [
        {"kind": "reservation", "id": "R1", "op": "equals"}]}}) + "\n",
     r"tasks\.jsonl:2, sample 't2', field 'success\.state\.0\.op'"),
    ("tasks.jsonl", json.dumps(TASK) + "\n" + json.dumps(TASK) + "\n",
     r"tasks\.jsonl:2, sample 'cancel-r1', field 'id': duplicate task id"),
    ("tasks.jsonl", "\n[1,\n", r"tasks\.jsonl:2: malformed JSON"),
])
def test_bad_files_are_refused_with_file_line_and_field(tmp_path: Path, where: str, content: str,
                                                         match: str) -> None:
    write(tmp_path)
    (tmp_path / where).write_text(content)
    with pytest.raises(DataError, match=match):
        load_world(tmp_path)


def test_a_missing_folder_or_world_json_is_named(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"nope: not a world folder"):
        load_world(tmp_path / "nope")
    with pytest.raises(DataError, match=r"world\.json: missing"):
        load_world(tmp_path)


def test_final_state_applies_what_the_simulated_results_showed() -> None:
    world = World.model_validate({**WORLD, "tasks": [TASK]})
    steps = [ToolStep("cancel_reservation", {"reservation_id": "R1"},
                      '{"reservation_id": "R1", "status": "cancelled", "refund": 420}'),
             ToolStep("get_reservation_details", {"reservation_id": "R9"},
                      '**Environment Observation:**\nError: no {"reservation_id": "R9", "status": "x"}'),
             ("delete_note", {"note_id": "N1"}, '{"deleted": true}')]
    state = final_state(world, steps)
    assert state["reservation"]["R1"]["status"] == "cancelled"
    assert state["reservation"]["R1"]["seats"] == 2 and state["reservation"]["R1"]["refund"] == 420
    assert "R9" not in state["reservation"] and "N1" not in state["note"]
    assert world.initial_state.entities["reservation"]["R1"]["status"] == "active", "the world is untouched"


def test_evaluate_checks_state_and_trace_and_says_why() -> None:
    world = World.model_validate({**WORLD, "tasks": [TASK]})
    task = world.tasks[0]
    initial = evaluate(task, world.initial_state.entities, [])
    assert not initial.passed
    assert initial.reasons == ['reservation R1 field \'status\' is "active", wanted eq "cancelled"',
                               'no call cancel_reservation({"reservation_id": "R1"})']
    plan = [{"tool": s.tool, "arguments": s.arguments, "observation": '{"id": "R1", "status": "cancelled"}'}
            for s in task.reference_plan]
    done = final_state(world, [(p["tool"], p["arguments"], p["observation"]) for p in plan])
    assert evaluate(task, done, plan) == (True, [])


@pytest.mark.parametrize(("cond", "passed"), [
    ({"field": "seats", "op": "gt", "value": 1}, True), ({"field": "seats", "op": "lt", "value": "2"}, False),
    ({"field": "legs", "op": "contains", "value": "JFK"}, True),
    ({"field": "legs", "op": "contains", "value": "LAX"}, False),
    ({"field": "status", "op": "ne", "value": "active"}, False), ({"field": "status", "op": "exists"}, True),
    ({"field": "refund", "op": "absent"}, True), ({"op": "exists"}, True),
    ({"id": "R2", "op": "absent"}, True), ({"id": "R2", "field": "status", "op": "eq", "value": "x"}, False),
])
def test_each_state_operator(cond: dict[str, Any], passed: bool) -> None:
    task = Task.model_validate({"id": "t", "instruction": "x",
                                "success": {"state": [{"kind": "reservation", "id": "R1", **cond}]}})
    verdict = evaluate(task, WORLD["initial_state"]["entities"], [])
    assert verdict.passed is passed and (verdict.reasons == []) is passed


def test_trace_conditions_match_argument_subsets_and_forbid_calls() -> None:
    task = Task.model_validate({"id": "t", "instruction": "x", "success": {"trace": [
        {"tool": "book", "arguments": {"flight": {"number": "HAT1"}}},
        {"tool": "cancel_reservation", "op": "not_called"}]}})
    ok = [{"tool": "book", "arguments": {"flight": {"number": "HAT1", "date": "d"}, "pax": 2}}]
    assert evaluate(task, {}, ok).passed
    bad = evaluate(task, {}, [*ok, {"tool": "cancel_reservation", "arguments": {"reservation_id": "R1"}}])
    assert bad == (False, ["a forbidden call cancel_reservation({}) was made"])
    assert evaluate(Task(id="t", instruction="x"), {}, []).reasons == ["the task has no success condition"]


def test_the_spec_carries_tools_and_the_ledger_starts_knowing_the_entities() -> None:
    spec = load_world_from(WORLD).to_spec()
    assert [t["name"] for t in spec.tools] == [t["name"] for t in WORLD["tools"]]
    assert '"id": "R1"' in spec.initial_state
    ledger = open_ledger(spec)
    assert ledger.known[("reservation", "R1")]["status"] == "active"
    action = json.dumps({"name": "get_reservation_details", "arguments": {"reservation_id": "R1"}})
    found = ledger.check(f"<tool_call>{action}</tool_call>",
                         '{"reservation_id": "R1", "status": "pending"}')
    assert [c.kind for c in found] == ["entity_field"], "a result contradicting the initial state is caught"


def load_world_from(data: dict[str, Any]) -> World:
    return World.model_validate(data)

"""The standard perturbation curricula of a world folder: written as controls/*.yaml, swept by rollouts."""

from __future__ import annotations

import json
from pathlib import Path

from agentworld.domains.spec import load_control_spec
from agentworld.models.base import ChatRequest
from agentworld.models.scripted import ScriptedBackend
from agentworld.synth.curricula import CurriculumRates, standard_controls, write_controls
from agentworld.synth.world import load_world
from agentworld.train.sweep import load_world_tasks, sweep_controls

LIST = {"name": "list_bookings", "description": "All bookings.", "inputSchema": {"type": "object"}}
CANCEL = {"name": "cancel_booking", "description": "Cancel a booking.",
          "inputSchema": {"type": "object", "properties": {"booking_id": {"type": "string"}},
                          "required": ["booking_id"]}}
BOOKINGS = {f"B{i}": {"status": "active", "city": f"city-{i}"} for i in range(1, 7)}
TASK = {"id": "t1", "instruction": "Cancel booking B1.",
        "success": {"state": [{"kind": "booking", "id": "B1", "field": "status", "op": "eq",
                               "value": "cancelled"}]}}


def _world(root: Path, tools: list[dict[str, object]]) -> Path:
    root.mkdir()
    (root / "world.json").write_text(json.dumps({
        "version": 1, "name": "bookings", "domain": "mcp", "scenario": {"service": "bookings"},
        "tools": tools,
        "initial_state": {"entities": {"booking": BOOKINGS}}}))
    (root / "tasks.jsonl").write_text(json.dumps(TASK) + "\n")
    return root


def _agent(request: ChatRequest) -> str:
    """List the bookings twice, then cancel B1 until a result shows it cancelled; then DONE."""
    if '"cancelled"' in request.messages[-1].content:
        return "DONE"
    replies = sum(m.role == "assistant" for m in request.messages)
    if replies < 2:
        return '{"tool_name": "list_bookings", "arguments": {}}'
    return '{"tool_name": "cancel_booking", "arguments": {"booking_id": "B1"}}'


def _world_model(request: ChatRequest) -> str:
    if "cancel_booking" in request.messages[-1].content:
        result: object = {"booking_id": "B1", "status": "cancelled"}
    else:
        result = {"bookings": [{"booking_id": k, **v} for k, v in BOOKINGS.items()]}
    return f"<predicted_observation>{json.dumps(result)}</predicted_observation>"


def test_standard_controls_are_written_once_and_swept(tmp_path: Path) -> None:
    root = _world(tmp_path / "w", [LIST, CANCEL])
    rates = CurriculumRates(intermittent=1.0, partial=1.0, stale=1.0)
    written = write_controls(root, standard_controls(load_world(root), rates))
    assert [p.name for p in written] == ["intermittent.yaml", "pagination.yaml", "partial.yaml", "stale.yaml"]
    paged = load_control_spec(root / "controls" / "pagination.yaml")
    assert paged.faults[0].tools == ["list_bookings"] and paged.faults[0].params == {"page_size": 2}

    (root / "controls" / "stale.yaml").write_text("faults: []\n")  # the user's own edit
    assert write_controls(root, standard_controls(load_world(root), rates)) == []
    assert (root / "controls" / "stale.yaml").read_text() == "faults: []\n"
    write_controls(root, standard_controls(load_world(root), rates), overwrite=True)

    world, spec, tasks = load_world_tasks(root)
    rows = sweep_controls(ScriptedBackend(default=_agent), ScriptedBackend(default=_world_model), spec,
                          sorted(world.controls.items()), tasks, episodes=1, max_turns=5)
    by_name = {row.controls: (row, eps[0]) for row, eps in rows}
    assert list(by_name) == ["clean", "intermittent", "pagination", "partial", "stale"]
    assert by_name["clean"][0].faults == {} and by_name["clean"][0].success_rate == 1.0
    # every call fails: B1 is never cancelled within the turn limit
    assert by_name["intermittent"][0].fault_turns == 5 and by_name["intermittent"][0].success_rate == 0.0
    for name, kind in (("pagination", "pagination"), ("partial", "truncated")):
        row, episode = by_name[name]
        assert row.faults == {kind: 2}, name  # both reads, never the cancel
        assert [t.meta["fault"] for t in episode.trajectory.turns] == [kind, kind, None], name
        assert row.success_rate == 1.0, name
    # the first read has no earlier answer to replay: the stale draw changes nothing and is not counted
    row, episode = by_name["stale"]
    assert (row.faults, row.faults_without_effect, row.success_rate) == ({"stale": 1}, {"stale": 1}, 1.0)
    assert [t.meta["fault"] for t in episode.trajectory.turns] == [None, "stale", None]
    clean_list = by_name["clean"][1].trajectory.turns[0].observation
    assert clean_list.count("booking_id") == 6
    assert by_name["pagination"][1].trajectory.turns[0].observation.count("booking_id") == 2
    assert by_name["partial"][1].trajectory.turns[0].observation.count("booking_id") == 3


def test_a_world_without_read_tools_gets_only_intermittent_failures(tmp_path: Path) -> None:
    root = _world(tmp_path / "w", [CANCEL])
    assert list(standard_controls(load_world(root))) == ["intermittent"]

"""A small world folder (world.json + tasks.jsonl) shared by the synth, serve and input tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

WORLD: dict[str, Any] = {
    "version": 1, "name": "airline", "domain": "mcp",
    "scenario": {"service": "airline reservations", "description": "Book and cancel flights.",
                 "users": ["traveller"], "failure_modes": ["flight full"]},
    "tools": [
        {"name": "get_reservation_details", "description": "Read a reservation.",
         "inputSchema": {"type": "object", "properties": {"reservation_id": {"type": "string"}},
                         "required": ["reservation_id"]}},
        {"name": "cancel_reservation", "description": "Cancel a reservation.",
         "inputSchema": {"type": "object", "properties": {"reservation_id": {"type": "string"}}}},
        {"name": "delete_note", "description": "Delete a note.",
         "inputSchema": {"type": "object", "properties": {"note_id": {"type": "string"}}}},
    ],
    "initial_state": {"entities": {
        "reservation": {"R1": {"status": "active", "user_id": "u1", "seats": 2, "legs": ["SFO", "JFK"]}},
        "note": {"N1": {"text": "window seat"}}}},
    "provenance": {"seeds": ["tau:0"], "generator": "scripted", "stage_versions": {"scenario": 1}},
}
TASK: dict[str, Any] = {
    "id": "cancel-r1", "instruction": "Cancel reservation R1.",
    "success": {"state": [{"kind": "reservation", "id": "R1", "field": "status", "op": "eq",
                           "value": "cancelled"}],
                "trace": [{"tool": "cancel_reservation", "arguments": {"reservation_id": "R1"}}]},
    "reference_plan": [{"tool": "cancel_reservation", "arguments": {"reservation_id": "R1"}}],
    "reference_answer": None,
}


def write(tmp: Path, world: dict[str, Any] | None = None, tasks: list[Any] | None = None) -> Path:
    (tmp / "world.json").write_text(json.dumps(world or WORLD))
    (tmp / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in (tasks or [TASK])))
    return tmp

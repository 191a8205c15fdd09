"""``synth envs --per-seed K`` offline: distinct worlds, multi-step tasks, plans checked by the world-state
model, curricula that fire; and the world-state model's rules on their own."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from agentworld.models.base import ChatRequest, create_backend
from agentworld.schema import Message
from agentworld.synth.coverage import curriculum_coverage
from agentworld.synth.state_model import answer, apply_call
from agentworld.synth.world import load_world, render_entities

TAU = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "tau_bench_airline_gpt4o_dev.json"
TAU = TAU if TAU.exists() else Path("/work/shared/data/tau_bench_airline_gpt4o_dev.json")
needs_tau = pytest.mark.skipif(not TAU.exists(), reason="tau-bench seed file not present")


def test_world_state_rules_read_list_write_delete_create() -> None:
    state = {"order": {"A1": {"user_id": "u1", "status": "open", "total": 5},
                       "A2": {"user_id": "u1", "status": "open", "total": 9},
                       "B1": {"user_id": "u2", "status": "open", "total": 1}},
             "user": {"u1": {"name": "Ana"}}}
    assert json.loads(apply_call(state, "get_order_details", {"order_id": "A2"}))["total"] == 9
    listed = json.loads(apply_call(state, "list_orders", {"user_id": "u1"}))["orders"]
    assert [o["order_id"] for o in listed] == ["A1", "A2"]
    assert json.loads(apply_call(state, "cancel_order", {"order_id": "A1"}))["status"] == "cancelled"
    assert state["order"]["A2"]["status"] == "open", "a write changes only the entity it names"
    assert json.loads(apply_call(state, "update_user", {"user_id": "u1", "name": "Bo"}))["name"] == "Bo"
    assert apply_call(state, "delete_order", {"order_id": "B1"}) == "Deleted order B1."
    assert "B1" not in state["order"]
    assert apply_call(state, "get_order_details", {"order_id": "ZZ"}).startswith("Error: order ZZ not found")
    made = json.loads(apply_call(state, "create_order", {"user_id": "u1", "total": 3}))
    assert made["order_id"] in state["order"] and made["total"] == 3


def test_world_state_answers_from_the_prompt_and_replays_only_successful_calls() -> None:
    system = "You simulate tools.\n\n# Initial state\n" + render_entities(
        {"order": {"A1": {"status": "open"}}})
    cancel = json.dumps({"name": "cancel_order", "arguments": {"order_id": "A1"}})
    read = json.dumps({"name": "get_order_details", "arguments": {"order_id": "A1"}})

    def ask(*turns: tuple[str, str]) -> dict[str, object]:
        messages = [Message(role="system", content=system)]
        for role, text in turns:
            messages.append(Message(role=role, content=text))  # type: ignore[arg-type]
        return json.loads(answer(ChatRequest(messages=tuple(messages))))

    assert ask(("user", read))["status"] == "open"
    assert ask(("user", cancel), ("assistant", '{"order_id": "A1", "status": "cancelled"}'),
               ("user", read))["status"] == "cancelled"
    assert ask(("user", cancel), ("assistant", "Error: 503 Service Unavailable"),
               ("user", read))["status"] == "open", "a call answered with an error changed nothing"


@needs_tau
def test_per_seed_variants_are_distinct_multi_step_and_pass_every_check(tmp_path: Path) -> None:
    out = tmp_path / "envs"
    done = subprocess.run(
        [sys.executable, "-m", "agentworld", "synth", "envs", "--seed-files", str(TAU), "--limit", "4",
         "--per-seed", "6", "--out", str(out), "--generator-model", "synth-template", "--model",
         "world-state", "--no-progress"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["skipped"] == [] and report["summary"]["worlds"] == 24
    assert report["summary"]["kept"] >= 20, report["summary"]
    status = json.loads((out / "env_00007" / "status.json").read_text())
    assert status["variant"] == 1 and status["kept"] is True
    worlds = [load_world(p) for p in sorted(out.glob("env_*"))]
    lengths = Counter(len(t.reference_plan) for w in worlds for t in w.tasks)
    assert set(lengths) <= {2, 3, 4, 5} and len(lengths) >= 2
    assert all(t.success.state and not t.instruction.startswith("Call ") for w in worlds for t in w.tasks)
    assert len({frozenset(t.name for t in w.tools) for w in worlds}) >= 12, "variants differ in their tools"
    assert len({json.dumps(w.initial_state.entities, sort_keys=True) for w in worlds}) == 24
    coverage = asyncio.run(curriculum_coverage(worlds[:6], create_backend("world-state"), seeds=range(20)))
    assert set(coverage) == {"intermittent", "pagination", "partial", "stale"}
    assert all(hit / total >= 0.7 for hit, total in coverage.values()), coverage
    # a rerun resumes: nothing is asked again
    again = subprocess.run(
        [sys.executable, "-m", "agentworld", "synth", "envs", "--seed-files", str(TAU), "--limit", "4",
         "--per-seed", "6", "--out", str(out), "--generator-model", "synth-template", "--no-progress"],
        capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "0 generator requests sent" in again.stdout, again.stdout


@needs_tau
def test_a_plan_that_misses_its_goal_is_rejected_by_the_world_state_simulator(tmp_path: Path) -> None:
    out = tmp_path / "envs"
    args = [sys.executable, "-m", "agentworld", "synth", "envs", "--seed-files", str(TAU), "--limit", "1",
            "--per-seed", "2", "--out", str(out), "--generator-model", "synth-template", "--no-progress"]
    assert subprocess.run(args, capture_output=True, text=True, timeout=300).returncode == 0
    tasks = out / "env_00000" / "tasks.jsonl"
    rows = [json.loads(line) for line in tasks.read_text().splitlines()]
    rows[0]["reference_plan"] = [s for s in rows[0]["reference_plan"]
                                 if not s["tool"].startswith(("cancel", "delete", "remove", "update", "edit",
                                                              "modify"))]
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = subprocess.run([sys.executable, "-m", "agentworld", "synth", "check", str(out), "--out",
                           str(tmp_path / "check"), "--model", "world-state"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "check" / "report.json").read_text())
    assert report["summary"]["reasons"].get("reference_plan_fails") == 1, report["summary"]

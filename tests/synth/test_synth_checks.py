"""The world checks of issue 11: each bad world is rejected with its own reason, a clean one is kept.

The world model is scripted: a consistent fake replays the actions in its prompt to know each order's
status (so a re-read agrees with an earlier cancel), a forgetful one always shows the initial status.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentworld.models.base import ChatRequest
from agentworld.models.scripted import ScriptedBackend
from agentworld.synth.checks import CheckThresholds, run_checks
from agentworld.synth.report import write_report

ORDER_ID = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
TOOLS = [{"name": "get_order", "description": "Show an order.", "inputSchema": ORDER_ID},
         {"name": "cancel_order", "description": "Cancel an order.", "inputSchema": ORDER_ID}]
TASK = {"id": "cancel-a1", "instruction": "Cancel order A1.",
        "success": {"state": [{"kind": "order", "id": "A1", "field": "status", "op": "eq",
                               "value": "cancelled"}],
                    "trace": [{"tool": "cancel_order", "arguments": {"order_id": "A1"}}]},
        "reference_plan": [{"tool": "get_order", "arguments": {"order_id": "A1"}},
                           {"tool": "cancel_order", "arguments": {"order_id": "A1"}}]}
WORLD = {"version": 1, "name": "shop", "domain": "mcp",
         "scenario": {"service": "An online shop's order desk",
                      "description": "Customers look up their orders and cancel the ones not yet shipped.",
                      "users": ["customer"], "failure_modes": ["order already shipped"]},
         "tools": TOOLS,
         "initial_state": {"entities": {"order": {"A1": {"status": "pending", "total": 30}}}}}
_ACTION = re.compile(r"```json\n(.*?)\n```", re.S)


def make_world(root: Path, name: str, *, world: dict[str, Any] | None = None,
               tasks: list[dict[str, Any]] | None = None) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "world.json").write_text(json.dumps({**(world or WORLD), "name": name}))
    (folder / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in (tasks or [TASK])))
    return folder


def _calls(request: ChatRequest) -> list[dict[str, Any]]:
    return [json.loads(m.group(1)) for msg in request.messages if msg.role == "user"
            for m in [_ACTION.search(msg.content)] if m]


def _observation(order: str, status: str) -> str:
    body = json.dumps({"order_id": order, "status": status, "total": 30})
    return f"<predicted_observation>\n[Observation]\n{body}\n</predicted_observation>"


def consistent(request: ChatRequest) -> str:
    """A world model that remembers: an order is cancelled once a cancel_order for it was called."""
    calls = _calls(request)
    order = calls[-1]["arguments"]["order_id"]
    cancelled = any(c["tool_name"] == "cancel_order" and c["arguments"]["order_id"] == order for c in calls)
    return _observation(order, "cancelled" if cancelled else "pending")


def forgetful(request: ChatRequest) -> str:
    """A world model that forgets: every read shows the initial status, even after a cancel."""
    call = _calls(request)[-1]
    return _observation(call["arguments"]["order_id"],
                        "cancelled" if call["tool_name"] == "cancel_order" else "pending")


def check(folders: list[Path], model: Any = None, **limits: Any) -> dict[str, Any]:
    backend = ScriptedBackend(default=model or consistent)
    report = run_checks(folders, model=backend, thresholds=CheckThresholds(**limits))
    return {Path(w.path).name: w for w in report.worlds}


def test_a_clean_world_is_kept(tmp_path: Path) -> None:
    verdict = check([make_world(tmp_path, "clean")])["clean"]
    assert verdict.kept and verdict.stage is None and verdict.rejections == []
    # a read of order A1 (the initial entity), the plan, then get_order again
    assert verdict.probe_steps == 4 and verdict.probe_contradictions == 0


@pytest.mark.parametrize(("schema", "says"), [
    ({"type": "object", "properties": {"order_id": {"type": "strng"}}},
     "is not valid under any of the given"),
    ({"type": "object", "properties": {"order_id": {"$ref": "https://example.com/id.json"}}},
     "points outside the schema"),
    ({"type": "object", "properties": {"order_id": {"type": "string", "pattern": "^(?=A)\\w+$"}}},
     "no back-references or look-around"),
    ({"type": "string"}, "must have type 'object'"),
])
def test_a_tool_schema_error_is_rejected(tmp_path: Path, schema: dict[str, Any], says: str) -> None:
    world = copy.deepcopy(WORLD)
    world["tools"][0]["inputSchema"] = schema
    verdict = check([make_world(tmp_path, "bad-schema", world=world)])["bad-schema"]
    assert not verdict.kept and verdict.stage == "schema"
    assert [r.reason for r in verdict.rejections] == ["tool_schema_invalid"]
    assert "get_order" in verdict.rejections[0].detail and says in verdict.rejections[0].detail


def test_a_task_naming_a_missing_tool_is_rejected(tmp_path: Path) -> None:
    task = {**TASK, "reference_plan": [*TASK["reference_plan"], {"tool": "refund_order",
                                                                 "arguments": {"order_id": "A1"}}]}
    verdict = check([make_world(tmp_path, "missing-tool", tasks=[task])])["missing-tool"]
    assert verdict.stage == "references" and not verdict.kept
    assert [(r.reason, r.task) for r in verdict.rejections] == [("unknown_tool", "cancel-a1")]
    assert "'refund_order'" in verdict.rejections[0].detail


def test_a_condition_on_a_missing_entity_or_bad_arguments_is_rejected(tmp_path: Path) -> None:
    success = {"state": [{"kind": "order", "id": "Z9", "field": "status", "value": "cancelled"},
                         {"kind": "invoice", "id": "A1", "op": "exists"}],
               "trace": TASK["success"]["trace"]}
    plan = [{"tool": "cancel_order", "arguments": {"order_id": 17}}]
    verdict = check([make_world(tmp_path, "ghost", tasks=[{**TASK, "success": success,
                                                           "reference_plan": plan}])])["ghost"]
    reasons = sorted(r.reason for r in verdict.rejections)
    assert verdict.stage == "references"
    assert reasons == ["invalid_plan_arguments", "unknown_entity", "unknown_entity"]
    details = " ".join(r.detail for r in verdict.rejections)
    assert "'Z9'" in details and "'invoice'" in details and "17 is not of type 'string'" in details


def test_an_initial_state_that_already_meets_the_goal_is_rejected(tmp_path: Path) -> None:
    world = copy.deepcopy(WORLD)
    world["initial_state"]["entities"]["order"]["A1"]["status"] = "cancelled"
    verdict = check([make_world(tmp_path, "done-already", world=world)])["done-already"]
    assert verdict.stage == "goal" and not verdict.kept
    assert [r.reason for r in verdict.rejections] == ["goal_already_met"]


def test_a_task_an_empty_plan_passes_is_rejected(tmp_path: Path) -> None:
    task = {**TASK, "success": {"trace": [{"tool": "cancel_order", "arguments": {"order_id": "A1"},
                                           "op": "not_called"}]}}
    verdict = check([make_world(tmp_path, "no-work", tasks=[task])])["no-work"]
    assert verdict.stage == "goal" and [r.reason for r in verdict.rejections] == ["empty_plan_passes"]


def test_a_reference_plan_that_fails_in_the_simulator_is_rejected(tmp_path: Path) -> None:
    task = {**TASK, "success": {"state": TASK["success"]["state"]},
            "reference_plan": TASK["reference_plan"][:1]}
    backend = ScriptedBackend(default=consistent)
    report = run_checks([make_world(tmp_path, "plan-fails", tasks=[task])], model=backend)
    verdict = report.worlds[0]
    assert verdict.stage == "reference_plan" and not verdict.kept
    assert [r.reason for r in verdict.rejections] == ["reference_plan_fails"]
    assert "order A1 field 'status' is \"pending\", wanted eq \"cancelled\"" in verdict.rejections[0].detail
    assert len(backend.calls) == 1  # the plan ran in the simulator; no probe after a failed plan


def test_a_near_duplicate_scenario_is_rejected_and_the_first_kept(tmp_path: Path) -> None:
    first = make_world(tmp_path, "first")
    twin = copy.deepcopy(WORLD)
    twin["scenario"]["description"] = "Customers look up their orders, and cancel the ones not shipped yet!"
    other = copy.deepcopy(WORLD)
    other["scenario"] = {"service": "A city library's loan desk", "description": "Members borrow and "
                         "return books; late returns pay fines.", "users": ["member"], "failure_modes": []}
    folders = [first, make_world(tmp_path, "twin", world=twin), make_world(tmp_path, "other", world=other)]
    verdicts = check(folders)
    assert verdicts["first"].kept and verdicts["other"].kept  # same tools, another story: not a duplicate
    twin_verdict = verdicts["twin"]
    assert twin_verdict.stage == "duplicates"
    assert [r.reason for r in twin_verdict.rejections] == ["near_duplicate"]
    assert str(first) in twin_verdict.rejections[0].detail
    assert check(folders, duplicate_similarity=1.0)["twin"].kept  # the threshold is the user's


def test_the_contradiction_budget(tmp_path: Path) -> None:
    folder = make_world(tmp_path, "forgets")
    verdict = check([folder], model=forgetful)["forgets"]
    assert verdict.stage == "probe" and [r.reason for r in verdict.rejections] == ["contradiction_budget"]
    assert verdict.probe_steps == 4 and verdict.probe_contradictions == 1
    assert "1 of 4 probe steps contradicted the ledger" in verdict.rejections[0].detail
    assert "status" in verdict.rejections[0].detail
    assert check([folder], model=forgetful, max_contradiction_rate=0.5)["forgets"].kept


def test_the_probe_reads_each_initial_entity(tmp_path: Path) -> None:
    def inventive(request: ChatRequest) -> str:  # shows order A1 as shipped, which it never was
        call = _calls(request)[-1]
        return _observation("A1", "cancelled" if call["tool_name"] == "cancel_order" else "shipped")

    task = {**TASK, "reference_plan": TASK["reference_plan"][1:]}  # the plan itself never reads A1
    verdict = check([make_world(tmp_path, "invents", tasks=[task])], model=inventive)["invents"]
    assert verdict.stage == "probe" and verdict.probe_steps == 2 and verdict.probe_contradictions == 1
    assert 'order A1 had status="pending"' in verdict.rejections[0].detail


def test_an_unreadable_folder_is_rejected_at_load(tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "world.json").write_text("{not json")
    verdict = check([folder])["broken"]
    assert verdict.stage == "load" and verdict.rejections[0].reason == "invalid_world"
    assert "world.json" in verdict.rejections[0].detail


def test_report_counts_per_stage_and_reason_and_escapes_html(tmp_path: Path) -> None:
    world = copy.deepcopy(WORLD)
    world["initial_state"]["entities"]["order"]["A1"]["status"] = "cancelled"
    bad = {**TASK, "id": "<script>alert(1)</script>",
           "reference_plan": [{"tool": "<img src=x>", "arguments": {}}]}
    folders = [make_world(tmp_path, "clean"), make_world(tmp_path, "done", world=world),
               make_world(tmp_path, "xss", tasks=[bad])]
    report = run_checks(folders, model=ScriptedBackend(default=consistent))
    json_path, html_path = write_report(report, tmp_path / "report")
    data = json.loads(json_path.read_text())
    assert data["summary"]["kept"] == 1 and data["summary"]["rejected"] == 2
    assert data["summary"]["reasons"] == {"goal_already_met": 1, "unknown_tool": 1}
    stages = {s["stage"]: s for s in data["summary"]["stages"]}
    assert stages["load"]["checked"] == 3 and stages["references"]["rejected"] == 1
    assert stages["goal"] == {"stage": "goal", "checked": 2, "kept": 1, "rejected": 1,
                              "reasons": {"goal_already_met": 1}}
    assert stages["duplicates"]["kept"] == 1
    page = html_path.read_text()
    assert "<script>" not in page and "<img" not in page and "&lt;script&gt;" in page


def test_without_a_model_the_simulator_stages_are_skipped(tmp_path: Path) -> None:
    report = run_checks([make_world(tmp_path, "clean")], model=None)
    assert report.skipped == ["reference_plan", "probe"] and report.worlds[0].kept
    assert [s.stage for s in report.stages()] == ["load", "schema", "references", "goal", "duplicates"]


def _cli() -> Any:
    from agentworld.cli import app

    return app


def test_cli_checks_against_the_mock_server_and_writes_the_report(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agentworld.serve.mock_server import MockConfig, run_mock_server

    worlds = tmp_path / "worlds"
    worlds.mkdir()
    make_world(worlds, "a-clean")
    ghost = {**TASK, "reference_plan": [{"tool": "nope", "arguments": {}}]}
    make_world(worlds, "b-ghost-tool", tasks=[ghost])
    out = tmp_path / "report"
    with run_mock_server(MockConfig()) as url:
        args = ["synth", "check", str(worlds), "--model-base-url", url, "--model", "mock", "--out", str(out),
                "--max-contradiction-rate", "0.5", "--cache", str(tmp_path / "cache.jsonl")]
        result = CliRunner().invoke(_cli(), args)
        log = url.removesuffix("/v1") + "/_mock/requests"
        sent = len(httpx.get(log).json())
        again = CliRunner().invoke(_cli(), args)
        assert len(httpx.get(log).json()) == sent  # the second run's answers all came from the cache
    assert result.exit_code == 0 and again.exit_code == 0, result.output
    assert sent == 2 and again.output == result.output  # the clean world's plan: get_order, cancel_order
    assert "kept 0 of 2 worlds; rejected by reason: reference_plan_fails 1, unknown_tool 1" in result.output
    data = json.loads((out / "report.json").read_text())
    by_name = {w["name"]: w for w in data["worlds"]}
    # the mock server answers "Command completed successfully." to every tool call: no order is cancelled
    assert by_name["a-clean"]["stage"] == "reference_plan"
    assert by_name["b-ghost-tool"]["stage"] == "references"
    assert data["thresholds"]["max_contradiction_rate"] == 0.5
    assert (out / "report.html").read_text().startswith("<!doctype html>")


def test_cli_without_a_model_runs_the_static_checks_and_refuses_a_missing_folder(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    folder = make_world(tmp_path, "clean")
    result = CliRunner().invoke(_cli(), ["synth", "check", str(folder), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert "kept 1 of 1 worlds" in result.output
    assert "not run without --model: reference_plan, probe" in result.output
    before = (tmp_path / "r" / "report.json").read_text()
    missing = ["synth", "check", str(tmp_path / "missing"), "--out", str(tmp_path / "r")]
    result = CliRunner().invoke(_cli(), missing)
    assert result.exit_code == 2 and "missing: no such world folder" in result.output
    assert (tmp_path / "r" / "report.json").read_text() == before  # the earlier report is left as it was


def test_duplicate_search_finds_what_comparing_every_pair_finds() -> None:
    import random

    from agentworld.synth.dedup import Scenario, _vectors, find_duplicates, jaccard

    rng = random.Random(5)
    words = [f"w{i}" for i in range(60)]
    items: list[Scenario] = []
    for _ in range(150):
        if items and rng.random() < 0.4:
            base = rng.choice(items)
            text = base.text.split()
            text[rng.randrange(len(text))] = rng.choice(words)
            items.append(Scenario(" ".join(text), base.tools))
        else:
            items.append(Scenario(" ".join(rng.choices(words, k=40)), frozenset(rng.sample(words[:10], 3))))
    for threshold, weight in ((0.9, 0.5), (0.7, 0.8), (0.4, 0.5), (0.95, 1.0)):
        vectors, kept, brute = _vectors([s.text for s in items]), [], []
        for i, item in enumerate(items):
            scores = [(weight * sum(v * vectors[j].get(f, 0.0) for f, v in vectors[i].items())
                       + (1 - weight) * jaccard(item.tools, items[j].tools), j) for j in kept]
            hits = [(score, j) for score, j in scores if score >= threshold - 1e-9]
            if hits:
                brute.append((i, max(hits, key=lambda h: (h[0], -h[1]))[1]))
            else:
                kept.append(i)
        found = [(d.index, d.of) for d in find_duplicates(items, threshold, weight)]
        assert found == brute and len(found) > 10


def test_a_reference_plan_over_the_step_limit_is_rejected_before_any_model_call(tmp_path: Path) -> None:
    backend = ScriptedBackend(default=consistent)
    report = run_checks([make_world(tmp_path, "long")], model=backend,
                        thresholds=CheckThresholds(max_plan_steps=1))
    assert report.worlds[0].stage == "references" and backend.calls == []
    assert [r.reason for r in report.worlds[0].rejections] == ["plan_too_long"]
    assert "2 steps, over the 1-step limit" in report.worlds[0].rejections[0].detail

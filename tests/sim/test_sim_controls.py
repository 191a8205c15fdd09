"""Seeded fault injection: exact triggers, reproducible patterns, rendering, transforms, control files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.errors import BackendError, DataError
from agentworld.models.base import ChatRequest
from agentworld.models.scripted import ScriptedBackend
from agentworld.sim import (
    ControlSpec,
    FaultInjector,
    FaultRule,
    Simulator,
    StepResult,
    WorldSpec,
    load_control_spec,
)
from agentworld.sim.controls import ToolValidator

TOOLS = [{"name": "search", "inputSchema": {"type": "object"}},
         {"name": "get", "inputSchema": {"type": "object"}}]


def wrap(text: str) -> str:
    return f"<predicted_observation>\n**Environment Observation:**\n{text}\n</predicted_observation>"


def world(request: ChatRequest) -> str:
    """A scripted world model: renders faults it is asked for, answers calls otherwise."""
    last = request.messages[-1].content
    if last.startswith("[Simulation control]"):
        kind = last.split("fault kind: ", 1)[1].split(")", 1)[0]
        shown = {"rate_limit": "Error: 429 Too Many Requests", "timeout": "Error: request timed out",
                 "permission_denied": "Error: permission denied"}.get(kind, "Error: 503 Service Unavailable")
        return wrap(f"{shown} (rendered)")
    return wrap(json.dumps({"ok": True, "n": len(request.messages)}))


def mcp_spec(*rules: FaultRule, seed: int | None = None, budget: int = 24_000) -> WorldSpec:
    return WorldSpec(domain="mcp", tools=TOOLS, controls=ControlSpec(faults=list(rules), seed=seed),
                     history_budget_tokens=budget)


def episode(spec: WorldSpec, seed: int, calls: list[dict[str, Any]],
            model: Any = "world") -> list[StepResult]:
    sim = Simulator(ScriptedBackend(default=world) if model == "world" else model, ledger=False)
    sim.reset(spec, seed=seed)
    out = [sim.step(call) for call in calls]
    assert sim.state().faults == [r.fault for r in out if r.fault is not None]
    sim.close()
    return out


def summary(results: list[StepResult]) -> list[tuple[str, str, Any]]:
    return [(r.observation, r.source, r.fault) for r in results]


def test_acceptance_rate_is_exact_reproducible_and_seeded() -> None:
    spec = mcp_spec(FaultRule(kind="server_error", rate=0.3), budget=256)
    calls = [{"tool_name": "search", "arguments": {"q": f"item {i}"}} for i in range(500)]
    first = episode(spec, 42, calls)
    faulted = [r for r in first if r.fault is not None]
    assert abs(len(faulted) / 500 - 0.3) <= 0.05
    assert {r.source for r in faulted} == {"fault"} and all(r.is_error for r in faulted)
    assert {r.source for r in first if r.fault is None} == {"world_model"}
    assert summary(episode(spec, 42, calls)) == summary(first)
    other = episode(spec, 43, calls)
    assert [r.fault is None for r in other] != [r.fault is None for r in first]
    pinned = mcp_spec(FaultRule(kind="server_error", rate=0.3), seed=42, budget=256)
    assert [r.fault is None for r in episode(pinned, 7, calls)] == [r.fault is None for r in first]


def test_injector_streams_are_per_rule() -> None:
    alone = FaultInjector(ControlSpec(faults=[FaultRule(kind="timeout", rate=0.5)]), seed=1)
    both = FaultInjector(ControlSpec(faults=[FaultRule(kind="timeout", rate=0.5),
                                             FaultRule(kind="rate_limit", rate=0.5)]), seed=1)
    a = [alone.decide("t") is not None for _ in range(200)]
    b = [(f.rule if f else None) for f in (both.decide("t") for _ in range(200))]
    assert [x == 0 for x in b] == a  # rule 0 fires exactly where it fires alone; first rule wins
    assert 1 in b and all(d.fired for d in both.decisions if d.fault is not None)
    assert len(both.decisions) == 200 and both.decisions[0].eligible == (0, 1)


def test_count_schedule_and_tools_filter_are_exact() -> None:
    calls = [{"tool_name": "search" if i % 2 == 0 else "get", "arguments": {"i": i}} for i in range(12)]
    counted = episode(mcp_spec(FaultRule(kind="rate_limit", count=3)), 0, calls)
    assert [i for i, r in enumerate(counted) if r.fault] == [0, 1, 2]
    scheduled = episode(mcp_spec(FaultRule(kind="timeout", schedule=[2, 5])), 0, calls)
    assert [i for i, r in enumerate(scheduled) if r.fault] == [1, 4]
    filtered = episode(mcp_spec(FaultRule(kind="permission_denied", count=2, tools=["get"])), 0, calls)
    assert [i for i, r in enumerate(filtered) if r.fault] == [1, 3]
    faults = [r.fault for r in filtered if r.fault]
    assert [(f.tool, f.detail["eligible_call"]) for f in faults] == [("get", 1), ("get", 2)]


def test_first_matching_rule_wins() -> None:
    spec = mcp_spec(FaultRule(kind="timeout", count=1, tools=["get"]),
                    FaultRule(kind="server_error", count=2))
    results = episode(spec, 0, [{"tool_name": "get", "arguments": {}},
                                {"tool_name": "search", "arguments": {}}])
    assert [r.fault.kind if r.fault else None for r in results] == ["timeout", "server_error"]


def test_model_renders_faults_with_a_named_request() -> None:
    model = ScriptedBackend(default=world)
    results = episode(mcp_spec(FaultRule(kind="rate_limit", count=1, params={"retry_after_s": 9})), 0,
                      [{"tool_name": "get", "arguments": {}}], model)
    assert results[0].source == "fault" and results[0].observation.endswith("(rendered)")
    action, control = model.calls[0].messages[-2:]
    assert action.content.startswith("**Action:**") and control.role == "user"
    assert "fault kind: rate_limit" in control.content and "retry after 9s" in control.content


@pytest.mark.parametrize(("kind", "params", "text"), [
    ("server_error", {}, "Error: 503 Service Unavailable (the server is temporarily unable to handle the "
                         "request)"),
    ("rate_limit", {}, "Error: 429 Too Many Requests (retry after 2s)"),
    ("permission_denied", {}, "Error: permission denied for tool get"),
    ("timeout", {"timeout_s": 10}, "Error: request timed out after 10s"),
])
def test_templates_without_a_model(kind: str, params: dict[str, Any], text: str) -> None:
    results = episode(mcp_spec(FaultRule(kind=kind, rate=1.0, params=params)), 0,
                      [{"tool_name": "get", "arguments": {}}], None)
    assert (results[0].observation, results[0].source, results[0].is_error) == (text, "template", True)


def test_terminal_templates_use_the_prompt_and_first_word() -> None:
    spec = WorldSpec(initial_state="root@box:/app#",
                     controls=ControlSpec(faults=[FaultRule(kind="permission_denied", rate=1.0,
                                                            tools=["cat"])]))
    sim = Simulator(None, ledger=False)
    sim.reset(spec)
    denied = sim.step([{"keystrokes": "cat /etc/shadow\n", "duration": 0.1}])
    assert denied.observation == ("root@box:/app# cat /etc/shadow\nbash: cat: Permission denied\n"
                                  "root@box:/app#")
    assert denied.fault is not None and denied.fault.tool == "cat"
    sim.reset(spec)
    with pytest.raises(BackendError, match="no world model"):  # `ls` is not eligible, so it needs a model
        sim.step([{"keystrokes": "ls -la\n", "duration": 0.1}])


def test_pagination_serves_later_pages_from_the_stored_rest() -> None:
    rows = [{"id": i} for i in range(12)]
    model = ScriptedBackend([wrap(json.dumps({"total": 12, "rows": rows}))])
    sim = Simulator(model, ledger=False)
    sim.reset(mcp_spec(FaultRule(kind="pagination", count=1, params={"page_size": 5})), seed=3)
    page1 = sim.step({"tool_name": "search", "arguments": {"q": "x"}})
    body = json.loads(page1.observation)
    assert body["rows"] == rows[:5] and body["total"] == 12 and body["next_cursor"]
    assert page1.fault is not None and page1.fault.detail["pages"] == 3
    page2 = sim.step({"tool_name": "search", "arguments": {"q": "x", "cursor": body["next_cursor"]}})
    body2 = json.loads(page2.observation)
    assert body2["rows"] == rows[5:10] and page2.meta["page"] == 2 and page2.source == "cache"
    last = sim.step({"tool_name": "search", "arguments": {"cursor": body2["next_cursor"]}})
    page3 = json.loads(last.observation)
    assert page3["rows"] == rows[10:] and page3["next_cursor"] is None
    assert len(model.calls) == 1


def test_truncated_keeps_a_fraction_of_whole_items() -> None:
    model = ScriptedBackend([wrap(json.dumps(list(range(10))))])
    results = episode(mcp_spec(FaultRule(kind="truncated", count=1, params={"keep_fraction": 0.3})), 0,
                      [{"tool_name": "get", "arguments": {}}], model)
    assert json.loads(results[0].observation) == [0, 1, 2]
    fault = results[0].fault
    assert fault is not None and fault.detail["kept"] == 3 and results[0].meta["partial"]


def test_stale_replays_an_earlier_observation_without_a_model_call() -> None:
    model = ScriptedBackend([wrap('{"balance": 10}'), wrap('{"ok": true}'), wrap('{"x": 1}')])
    spec = mcp_spec(FaultRule(kind="stale", schedule=[1, 3], tools=["get"]))
    sim = Simulator(model, ledger=False)
    sim.reset(spec)
    fresh = sim.step({"tool_name": "get", "arguments": {"id": 1}})  # drawn, but nothing earlier to replay
    assert (fresh.fault, fresh.meta, fresh.observation) == (None, {"fault_without_effect": "stale"},
                                                            '{"balance": 10}')
    sim.step({"tool_name": "search", "arguments": {}})
    sim.step({"tool_name": "get", "arguments": {"id": 1}})
    stale = sim.step({"tool_name": "get", "arguments": {"id": 1}})
    assert (stale.observation, stale.source, stale.meta["stale_from_turn"]) == ('{"x": 1}', "cache", 3)
    assert len(model.calls) == 3
    assert [f.kind for f in sim.state().faults] == ["stale"]


@pytest.mark.parametrize(("rule", "answer"), [
    (FaultRule(kind="stale", count=1), '{"balance": 10}'),  # a first call: nothing earlier to replay
    (FaultRule(kind="pagination", count=1, params={"page_size": 5}), "total 3 bookings"),  # one line
    (FaultRule(kind="pagination", count=1, params={"page_size": 5}), '{"rows": [1, 2], "total": 2}'),
    (FaultRule(kind="truncated", count=1, params={"keep_fraction": 1.0}), "[1, 2, 3]"),  # keeps it all
])
def test_a_fault_that_changes_nothing_the_agent_sees_is_not_counted(rule: FaultRule, answer: str) -> None:
    model = ScriptedBackend([wrap(answer)])
    results = episode(mcp_spec(rule), 0, [{"tool_name": "get", "arguments": {"id": 1}}], model)
    assert (results[0].observation, results[0].fault) == (answer, None)
    assert results[0].meta == {"fault_without_effect": rule.kind}


def test_load_control_spec_yaml_json_and_located_errors(tmp_path: Path) -> None:
    good = tmp_path / "controls.yaml"
    good.write_text("seed: 9\nfacts: [The sky is green.]\nfaults:\n  - kind: timeout\n    rate: 0.2\n"
                    "    tools: [search]\n", encoding="utf-8")
    spec = load_control_spec(good)
    assert spec.seed == 9 and spec.faults[0].rate == 0.2 and ControlSpec.load(good) == spec
    as_json = tmp_path / "controls.json"
    as_json.write_text(json.dumps(spec.model_dump()), encoding="utf-8")
    assert load_control_spec(as_json) == spec
    bad = tmp_path / "bad.yaml"
    bad.write_text("faults:\n  - kind: meteor\n    rate: 0.1\n", encoding="utf-8")
    with pytest.raises(DataError, match="Input should be 'timeout'") as err:
        load_control_spec(bad)
    assert err.value.path == str(bad) and err.value.field == "faults.0.kind"
    two = tmp_path / "two.json"
    two.write_text('{"faults": [{"kind": "timeout", "rate": 0.1, "count": 2}]}', encoding="utf-8")
    with pytest.raises(DataError, match="exactly one of rate, count, schedule"):
        load_control_spec(two)
    broken = tmp_path / "broken.yaml"
    broken.write_text("faults: [", encoding="utf-8")
    with pytest.raises(DataError, match="malformed YAML"):
        load_control_spec(broken)
    with pytest.raises(DataError, match="cannot read"):
        load_control_spec(tmp_path / "missing.yaml")


def test_facts_stay_in_the_system_prompt() -> None:
    model = ScriptedBackend(default=wrap("ok"))
    sim = Simulator(model, ledger=False)
    sim.reset(WorldSpec(domain="search", controls=ControlSpec(facts=["Paris is the capital of Spain."])))
    sim.step("capital of Spain")
    sim.step("capital of France")
    fact = "# World facts\n- Paris is the capital of Spain."
    assert all(fact in c.messages[0].content for c in model.calls)


def test_model_that_ignores_an_injected_fault_is_overruled_by_the_template() -> None:
    """Faults are enforced by the framework: a 'success' rendering of a failure is replaced."""
    from agentworld.models import ScriptedBackend
    from agentworld.sim import ControlSpec, FaultRule, Simulator, WorldSpec

    tools = [{"name": "get_user", "description": "Get a user.",
              "inputSchema": {"type": "object", "properties": {"user_id": {"type": "string"}},
                              "required": ["user_id"]}}]
    ok = wrap('{"user_id": "u1"}')
    model = ScriptedBackend([ok, wrap("Error: 503 Service Unavailable")])
    spec = WorldSpec(domain="mcp", tools=tools,
                     controls=ControlSpec(faults=[FaultRule(kind="server_error", count=2)]))
    sim = Simulator(model)
    sim.reset(spec, seed=0)
    ignored = sim.step({"tool_name": "get_user", "arguments": {"user_id": "u1"}})
    assert ignored.is_error and ignored.source == "template" and "503" in ignored.observation
    assert "did not show" in ignored.meta["fault_render"]
    rendered = sim.step({"tool_name": "get_user", "arguments": {"user_id": "u2"}})
    assert rendered.source == "fault" and rendered.observation == "Error: 503 Service Unavailable"
    model.assert_complete()


def test_fault_params_are_checked_per_kind(tmp_path: Path) -> None:
    bad = tmp_path / "controls.yaml"
    bad.write_text("faults:\n  - kind: pagination\n    rate: 0.5\n    params: {page_size: 0}\n",
                   encoding="utf-8")
    with pytest.raises(DataError, match="page_size: Input should be greater than or equal to 1") as err:
        load_control_spec(bad)
    assert err.value.field == "faults.0.params"
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("truncated", {"keep_fraction": -1}, "keep_fraction"),
        ("truncated", {"keep_fraction": 1.5}, "keep_fraction"),
        ("rate_limit", {"retry_after_s": "5"}, "retry_after_s"), ("server_error", {"status": 200}, "status"),
        ("timeout", {"timeout_s": float("inf")}, "timeout_s"), ("stale", {"page_size": 3}, "known: none"),
    ]
    for kind, params, text in cases:
        with pytest.raises(ValueError, match=text):
            FaultRule.model_validate({"kind": kind, "rate": 1.0, "params": params})
    assert FaultRule(kind="timeout", rate=1.0, params={"timeout_s": 10}).params == {"timeout_s": 10}
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        FaultRule(kind="timeout", schedule=[0])
    with pytest.raises(ValueError, match="temperature"):
        WorldSpec.model_validate({"temperature": -3})


def _validator(schema: dict[str, Any]) -> ToolValidator:
    return ToolValidator([{"name": "t", "inputSchema": {"type": "object", "properties": {"p": schema}}}])


def test_tool_schemas_resolve_only_local_references() -> None:
    schema = {"type": "object", "$defs": {"id": {"type": "string", "pattern": "^[a-z]+$"},
                                          "n": {"$anchor": "num", "type": "integer"}},
              "properties": {"a": {"$ref": "#/$defs/id"}, "b": {"$ref": "#num"}}}
    checker = ToolValidator([{"name": "t", "inputSchema": schema}])
    assert checker.check("t", {"a": "abc", "b": 1}) is None
    assert "does not match '^[a-z]+$'" in (checker.check("t", {"a": "ABC"}) or "")
    assert "is not of type 'integer'" in (checker.check("t", {"b": "x"}) or "")
    refused = [({"$ref": "https://example.org/s.json"}, "points outside the schema"),
               ({"$ref": "other.json#/x"}, "points outside the schema"),
               ({"$ref": "#/$defs/none"}, "points to nothing"), ({"$ref": "#nowhere"}, "no \\$anchor"),
               ({"$id": "https://example.org/inner"}, "nested \\$id"),
               ({"type": "string", "pattern": "(?=a)b"}, "not supported"),
               ({"type": "object", "patternProperties": {"^x": {}}, "unevaluatedProperties": False},
                "unevaluatedProperties together with patternProperties"),
               ({"type": "string", "description": "x" * 70_000}, "over the 65536-byte limit")]
    for schema_part, reason in refused:
        with pytest.raises(DataError, match=reason):
            _validator(schema_part)
    with pytest.raises(DataError, match="unsupported \\$schema"):
        ToolValidator([{"name": "t", "inputSchema": {"$schema": "http://127.0.0.1:1/m", "type": "object"}}])
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(40):
        deep = {"type": "object", "properties": {"x": deep}}
    with pytest.raises(DataError, match="nests deeper than 32"):
        _validator(deep)


def test_argument_checks_do_bounded_work() -> None:
    """Patterns on RE2, uniqueItems by hashing, a budget for schemas built to explode, capped depth."""
    assert "does not match" in (_validator({"type": "string", "pattern": "^(a+)+$"}).check(
        "t", {"p": "a" * 5000 + "!"}) or "")
    unique = _validator({"type": "array", "uniqueItems": True})
    assert "non-unique" in (unique.check("t", {"p": [{"a": 1}, {"a": 1.0}]}) or "")
    assert unique.check("t", {"p": [1, True, [1], [True], {"a": None}]}) is None
    assert unique.check("t", {"p": [{"i": i} for i in range(20_000)]}) is None
    defs = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(40)}
    defs["d40"] = {"type": "integer"}
    explosive = ToolValidator([{"name": "t", "inputSchema": {
        "type": "object", "$defs": defs, "properties": {"x": {"$ref": "#/$defs/d0"}}}}])
    assert "too complex to check" in (explosive.check("t", {"x": "not a number"}) or "")
    nested: Any = 1
    for _ in range(40):
        nested = [nested]
    assert "nest deeper than 32" in (unique.check("t", {"p": nested}) or "")

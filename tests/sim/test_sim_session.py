"""Simulator sessions with scripted models: messages sent, history budget, cache, ledger, router."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import agentworld
from agentworld.domains import DOMAINS
from agentworld.domains.actions import format_terminal_action
from agentworld.envs.sandbox import container_id
from agentworld.errors import AgentWorldError, BackendError
from agentworld.models.base import ChatRequest, ChatResult, Usage
from agentworld.models.scripted import ScriptedBackend
from agentworld.sim import ActionError, ControlSpec, ResponseCache, Simulator, StepResult, WorldSpec
from agentworld.sim import session as session_mod

LS = [{"keystrokes": "ls\n", "duration": 0.5}]
TOOLS = [{"name": "get_user", "description": "Look up a user.\nMore text.",
          "inputSchema": {"type": "object", "properties": {"user_id": {"type": "string"},
                                                           "limit": {"type": "integer", "minimum": 1}},
                          "required": ["user_id"], "additionalProperties": False}},
         {"name": "list_orders", "description": "List orders.", "inputSchema": {"type": "object"}}]


def wrap(text: str) -> str:
    return (f"<think>hmm</think><predicted_observation>\n**Environment Observation:**\n{text}\n"
            "</predicted_observation>")


def test_terminal_round_trip_sends_official_messages() -> None:
    host = container_id(7)
    model = ScriptedBackend([wrap(f"root@{host}:/app# ls\nREADME.md\nroot@{host}:/app#"),
                             wrap(f"root@{host}:/app# pwd\n/app\nroot@{host}:/app#")])
    sim = Simulator(model, ledger=False)
    first = sim.reset(seed=7)
    assert first == f"root@{host}:/app#"
    r1 = sim.step(LS)
    assert (r1.observation, r1.source, r1.turn, r1.reasoning) == (
        f"root@{host}:/app# ls\nREADME.md\nroot@{host}:/app#", "world_model", 1, "hmm")
    r2 = sim.step(json.dumps([{"keystrokes": "pwd\n", "duration": 0.5}]))
    system = DOMAINS["terminal"].system_prompt.rstrip()
    assert [(m.role, m.content) for m in model.calls[0].messages] == [
        ("system", system), ("user", format_terminal_action(LS, first))]
    assert [(m.role, m.content) for m in model.calls[1].messages] == [
        ("system", system), ("user", format_terminal_action(LS, first)),
        ("assistant", "**Environment Observation:**\n" + r1.observation),
        ("user", format_terminal_action([{"keystrokes": "pwd\n", "duration": 0.5}]))]
    assert model.calls[1].seed == 7 and model.calls[1].temperature == 0.0
    state = sim.state()
    assert state.turn == 2 and [t.observation for t in state.history] == [r1.observation, r2.observation]
    assert sim.history[0].action.startswith("**Current State:**")
    sim.close()


def test_mcp_round_trip_lists_tools_and_formats_calls() -> None:
    model = ScriptedBackend([wrap('{"user_id": "u1", "name": "Ann"}')])
    sim = Simulator(model, ledger=False)
    spec = WorldSpec(domain="mcp", name="crm", tools=TOOLS, initial_state="Users: u1 (Ann).",
                     controls=ControlSpec(facts=["The company is called Zorblax."]))
    first = sim.reset(spec, seed=1)
    assert first == ("MCP server 'crm' ready. 2 tools available:\n- get_user: Look up a user.\n"
                     "- list_orders: List orders.")
    result = sim.step({"tool_name": "get_user", "arguments": {"user_id": "u1"}})
    assert result.observation == '{"user_id": "u1", "name": "Ann"}' and not result.is_error
    system, user = model.calls[0].messages
    assert system.content.startswith(DOMAINS["mcp"].system_prompt.rstrip())
    assert "# Available tools\n" in system.content and '"name": "get_user"' in system.content
    assert "# Initial state\nUsers: u1 (Ann)." in system.content
    assert "# World facts\n- The company is called Zorblax." in system.content
    call = '{"tool_name": "get_user", "arguments": {"user_id": "u1"}}'
    assert user.content == f"**Action:**\n```json\n{call}\n```"


def test_other_domain_text_actions_and_own_system_prompt() -> None:
    model = ScriptedBackend([wrap("3 results")])
    sim = Simulator(model, ledger=False)
    spec = WorldSpec(domain="search", system_prompt="You simulate search.", initial_state="s0")
    assert sim.reset(spec) == "s0"
    assert sim.step("query: cats").observation == "3 results"
    assert [(m.role, m.content) for m in model.calls[0].messages] == [
        ("system", "You simulate search."), ("user", "query: cats")]


def test_history_budget_drops_oldest_whole_turns_and_says_so() -> None:
    obs = ["line " + str(i) + " " + "y" * 300 for i in range(6)]  # ~100 tokens a turn, budget 256
    model = ScriptedBackend([wrap(o) for o in obs])
    sim = Simulator(model, ledger=False)
    first = sim.reset(WorldSpec(history_budget_tokens=256), seed=3)
    for i in range(6):
        sim.step([{"keystrokes": f"echo {i}\n", "duration": 0.1}])
    counts = [len(c.messages) for c in model.calls]
    assert counts == [2, 4, 6, 6, 6, 6]
    last = model.calls[-1].messages
    roles = [m.role for m in last]
    assert roles == ["system"] + ["user", "assistant"] * ((len(last) - 2) // 2) + ["user"]
    kept = (len(last) - 2) // 2
    assert f"{5 - kept} earlier turns omitted; their effects are in the session state." in last[0].content
    assert f"# Initial state\n{first}" in last[0].content  # the dropped first turn carried it
    assert last[2].content == "**Environment Observation:**\n" + obs[5 - kept]
    assert sum(len(m.content) // 4 for m in last[1:-1]) <= 256
    assert "omitted" not in model.calls[0].messages[0].content


def test_token_counter_is_pluggable() -> None:
    model = ScriptedBackend(default=wrap("ok"))
    sim = Simulator(model, ledger=False, token_counter=lambda text: 1000)
    sim.reset(WorldSpec(domain="search", history_budget_tokens=1500))
    for _ in range(3):
        sim.step("q")
    last = model.calls[-1].messages
    assert len(last) == 2 and "2 earlier turns omitted" in last[0].content


def test_reasoning_usage_latency_truncated_come_from_the_chat_result() -> None:
    reply = ChatResult(content=wrap("partial"), reasoning="because", finish_reason="length",
                       usage=Usage(prompt_tokens=5, completion_tokens=7), latency_s=0.25)
    sim = Simulator(ScriptedBackend([reply]), ledger=False)
    sim.reset(WorldSpec(domain="web"))
    r = sim.step("click #buy")
    assert (r.reasoning, r.truncated, r.usage.completion_tokens, r.latency_s) == ("because", True, 7, 0.25)


def test_sync_step_inside_a_running_loop_points_to_astep() -> None:
    sim = Simulator(ScriptedBackend(default=wrap("ok")), ledger=False)

    async def main() -> StepResult:
        await sim.areset(WorldSpec(domain="search"))
        with pytest.raises(RuntimeError, match="astep"):
            sim.step("q")
        return await sim.astep("q")

    assert asyncio.run(main()).observation == "ok"


def test_step_before_reset_and_malformed_actions() -> None:
    sim = Simulator(ScriptedBackend(), ledger=False)
    with pytest.raises(AgentWorldError, match="reset"):
        sim.step(LS)
    sim.reset()
    with pytest.raises(ActionError, match="malformed terminal action: not valid JSON"):
        sim.step("ls -la")
    with pytest.raises(ActionError, match="'keystrokes'"):
        sim.step([{"keys": "ls\n"}])
    with pytest.raises(ActionError, match="duration"):
        sim.step([{"keystrokes": "ls\n", "duration": "soon"}])
    sim.reset(WorldSpec(domain="mcp", tools=TOOLS))
    with pytest.raises(ActionError, match="tool_name"):
        sim.step({"arguments": {}})
    with pytest.raises(ActionError, match="malformed mcp action"):
        sim.step("{not json")


def test_invalid_mcp_calls_answer_errors_without_a_model_call() -> None:
    model = ScriptedBackend()
    sim = Simulator(model, ledger=False)
    sim.reset(WorldSpec(domain="mcp", tools=TOOLS))
    unknown = sim.step({"tool_name": "delete_all", "arguments": {}})
    assert unknown.is_error and unknown.source == "template"
    assert unknown.observation == "Error: unknown tool 'delete_all' (available: get_user, list_orders)"
    bad = sim.step('{"tool_name": "get_user", "arguments": {"user_id": "u1", "limit": 0}}')
    assert bad.is_error
    assert bad.observation.startswith("Error: invalid arguments for tool 'get_user' at arguments.limit:")
    assert "minimum" in bad.observation
    missing = sim.step({"tool_name": "get_user", "arguments": {}})
    assert "'user_id' is a required property" in missing.observation
    assert model.calls == [] and sim.state().turn == 3


def test_invalid_tool_schema_is_a_located_error() -> None:
    sim = Simulator(ScriptedBackend())
    with pytest.raises(AgentWorldError, match=r"tools\[0\].inputSchema"):
        sim.reset(WorldSpec(domain="mcp", tools=[{"name": "t", "inputSchema": {"type": 5}}]))


def run_episode(model: Any, *, seed: int, cache: ResponseCache | None = None) -> list[StepResult]:
    sim = Simulator(model, ledger=False, cache=cache)
    sim.reset(WorldSpec(domain="mcp", tools=TOOLS), seed=seed)
    out = [sim.step({"tool_name": "get_user", "arguments": {"user_id": f"u{i}"}}) for i in range(4)]
    sim.close()
    return out


def echo(request: ChatRequest) -> str:
    return wrap(f"reply to {len(request.messages)} messages")


def test_cache_hits_identical_requests_and_persists(tmp_path: Any) -> None:
    cache = ResponseCache(tmp_path / "sim-cache.jsonl")
    model = ScriptedBackend(default=echo)
    first = run_episode(model, seed=5, cache=cache)
    assert [r.source for r in first] == ["world_model"] * 4 and len(model.calls) == 4
    again = run_episode(model, seed=5, cache=cache)
    assert len(model.calls) == 4 and [r.source for r in again] == ["cache"] * 4
    assert [r.observation for r in again] == [r.observation for r in first]
    run_episode(model, seed=6, cache=cache)
    assert len(model.calls) == 8  # the seed is part of the key
    cache.close()
    reloaded = ResponseCache(tmp_path / "sim-cache.jsonl")
    assert len(reloaded) == 8
    fresh = ScriptedBackend()
    assert [r.source for r in run_episode(fresh, seed=5, cache=reloaded)] == ["cache"] * 4 and not fresh.calls


def test_same_seed_and_replies_give_the_same_episode() -> None:
    a = run_episode(ScriptedBackend(default=echo), seed=11)
    b = run_episode(ScriptedBackend(default=echo), seed=11)
    def dump(results: list[StepResult]) -> list[dict[str, Any]]:
        return [r.model_dump(exclude={"latency_s"}) for r in results]

    assert dump(a) == dump(b)


class FakeLedger:
    def __init__(self) -> None:
        self.updates: list[tuple[str, str]] = []

    def summary(self) -> str:
        return "cwd: /app/repo"

    def check(self, action: str, observation: str) -> list[Any]:
        from agentworld.sim.ledger import Contradiction

        if ":/app#" not in observation:
            return []
        return [Contradiction(kind="cwd", message="the prompt shows the wrong cwd", expected="/app/repo",
                              found="/app")]

    def repair(self, action: str, observation: str, found: list[Any]) -> str | None:
        return observation.replace(":/app#", ":/app/repo#")

    def update(self, action: str, observation: str) -> None:
        self.updates.append((action, observation))


@pytest.fixture
def fake_ledger(monkeypatch: pytest.MonkeyPatch) -> FakeLedger:
    ledger = FakeLedger()
    monkeypatch.setattr(session_mod, "_make_ledger", lambda domain, spec: ledger)
    return ledger


def test_ledger_reask_then_repair(fake_ledger: FakeLedger) -> None:
    model = ScriptedBackend([wrap("root@h:/app# pwd\n/app/repo\nroot@h:/app#"),
                             wrap("root@h:/app# pwd\n/app/repo\nroot@h:/app#")])
    sim = Simulator(model, max_reasks=1)
    sim.reset(WorldSpec(initial_state="root@h:/app/repo#"))
    r = sim.step([{"keystrokes": "pwd\n", "duration": 0.1}])
    assert r.observation == "root@h:/app/repo# pwd\n/app/repo\nroot@h:/app/repo#"
    assert r.repaired and r.contradictions == ["the prompt shows the wrong cwd"]
    assert "# Session state (authoritative)\ncwd: /app/repo" in model.calls[0].messages[0].content
    reask = model.calls[1].messages
    assert reask[-2].role == "assistant" and reask[-1].role == "user"
    assert "the prompt shows the wrong cwd (expected: /app/repo; found: /app)" in reask[-1].content
    assert fake_ledger.updates[-1][1] == r.observation
    assert sim.state().ledger == "cwd: /app/repo"


def test_ledger_reask_that_fixes_needs_no_repair(fake_ledger: FakeLedger) -> None:
    model = ScriptedBackend([wrap("root@h:/app#"), wrap("root@h:/app/repo#")])
    sim = Simulator(model)
    sim.reset(WorldSpec(initial_state="root@h:/app/repo#"))
    r = sim.step([{"keystrokes": "\n", "duration": 0.1}])
    assert r.observation == "root@h:/app/repo#" and r.repaired and len(model.calls) == 2


class FakeRouter:
    def __init__(self) -> None:
        self.seeds: list[int | None] = []

    def route(self, domain: str, action: str) -> str:
        return "real" if '"keystrokes": "ls' in action else "model"

    async def execute(self, action: Any) -> str:
        return "root@h:/app# ls\nreal.txt\nroot@h:/app#\n"

    def reset(self, seed: int | None = None) -> None:
        self.seeds.append(seed)


def test_router_real_steps_skip_the_model() -> None:
    router = FakeRouter()
    model = ScriptedBackend([wrap("root@h:/app# cat x\nhi\nroot@h:/app#")])
    sim = Simulator(model, ledger=False, router=router)
    sim.reset(WorldSpec(initial_state="root@h:/app#"), seed=4)
    real = sim.step(LS)
    assert (real.source, real.observation) == ("real", "root@h:/app# ls\nreal.txt\nroot@h:/app#")
    assert not model.calls and router.seeds == [4]
    imagined = sim.step([{"keystrokes": "cat x\n", "duration": 0.1}])
    assert imagined.source == "world_model"
    assert model.calls[0].messages[2].content.endswith("real.txt\nroot@h:/app#")


def test_without_model_or_real_environment_is_a_backend_error() -> None:
    sim = Simulator(None)
    sim.reset()
    with pytest.raises(BackendError, match="no world model"):
        sim.step(LS)


def test_top_level_simulator_is_lazy() -> None:
    assert agentworld.Simulator is Simulator
    with pytest.raises(AttributeError, match="nope"):
        agentworld.nope  # noqa: B018


def test_default_ledger_runs_and_reports_its_summary() -> None:
    host = container_id(2)
    model = ScriptedBackend(default=wrap(f"root@{host}:/app# cd /tmp\nroot@{host}:/tmp#"))
    sim = Simulator(model)
    sim.reset(seed=2)
    assert host not in sim.state().ledger  # nothing established before the first step
    sim.step([{"keystrokes": "cd /tmp\n", "duration": 0.1}])
    assert sim.state().ledger == f"shell: root@{host} cwd /tmp"  # the host and the new working directory

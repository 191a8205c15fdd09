"""``Simulator.fork()``: a branch of the episode that never changes its parent nor reaches the real world.

Real components throughout (the MCP validator, seeded fault rules, a real routed environment — an
in-process counter registered like a user's domain, and the terminal sandbox where it is available);
only the world model is scripted, answering by the request so that call order does not matter.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from agentworld.domains.base import DomainPlugin, register_domain, unregister_domain
from agentworld.domains.ledger import Contradiction
from agentworld.domains.registry import Domain, DomainRegistry
from agentworld.envs.sandbox import missing_tools
from agentworld.errors import AgentWorldError, BackendError
from agentworld.models.base import ChatRequest
from agentworld.models.scripted import ScriptedBackend
from agentworld.serve.check import EnvCheckError, check_env
from agentworld.sim import ControlSpec, FaultRule, Simulator, WorldSpec
from agentworld.sim.router import Router

TOOLS: list[dict[str, Any]] = [
    {"name": "search", "inputSchema": {"type": "object", "required": ["query"],
                                       "properties": {"query": {"type": "string"}}}},
    {"name": "list", "inputSchema": {"type": "object", "properties": {"cursor": {"type": "string"}}}},
]
SPEC = WorldSpec(domain="mcp", tools=TOOLS, controls=ControlSpec(faults=[
    FaultRule(kind="server_error", rate=0.5, tools=["search"]),
    FaultRule(kind="pagination", count=1, tools=["list"], params={"page_size": 2})]))


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_name": tool, "arguments": arguments}


SEARCHES = [call("search", query=q) for q in "abcdefgh"]


class CountingLedger:
    """A ledger whose summary (hence every prompt) changes with each update it records."""

    def __init__(self) -> None:
        self.updates: list[str] = []

    def summary(self) -> str:
        return f"{len(self.updates)} updates" if self.updates else ""

    def check(self, action: str, observation: str) -> list[Contradiction]:
        return []

    def repair(self, action: str, observation: str, found: list[Contradiction]) -> str | None:
        return None

    def update(self, action: str, observation: str) -> None:
        self.updates.append(action)


def answer(request: ChatRequest) -> str:
    """A world model whose answer depends on the whole request: action, history length, session state."""
    system, current = request.messages[0].content, request.messages[-1].content
    state = system.split("# Session state (authoritative)\n")[1] if "# Session state" in system else "-"
    turns = (len(request.messages) - 2) // 2
    text = "\n".join(f"item {i}" for i in range(5)) if '"list"' in current else \
        f"result of {current[-30:]!r} after {turns} turns; {state}"
    return f"<predicted_observation>\n{text}\n</predicted_observation>"


def make_sim() -> Simulator:
    return Simulator(ScriptedBackend(default=answer), ledger_factory=lambda spec: CountingLedger())


def run(sim: Simulator, actions: list[dict[str, Any]]) -> list[tuple[str, str, bool, Any]]:
    return [(r.observation, r.source, r.is_error, r.fault) for r in map(sim.step, actions)]


def test_stepping_a_fork_leaves_the_parents_history_ledger_and_fault_draws_unchanged() -> None:
    with make_sim() as alone, make_sim() as parent:
        alone.reset(SPEC, seed=3)
        parent.reset(SPEC, seed=3)
        assert run(alone, SEARCHES[:3]) == run(parent, SEARCHES[:3])
        before = parent.state()
        with parent.fork() as branch:
            assert branch.state() == before  # the fork starts where its parent is
            imagined = run(branch, SEARCHES[3:] + SEARCHES[3:])
            assert branch.state().turn == 13 and branch.state().ledger != before.ledger
        assert parent.state() == before
        assert parent._ledger.updates == alone._ledger.updates  # type: ignore[attr-defined]
        expected = run(alone, SEARCHES[3:])
        assert run(parent, SEARCHES[3:]) == expected
        assert imagined[:5] == expected  # same seed, same history: the fork saw the same fault draws
        faults = [r[3] is not None for r in expected]
        assert any(faults) and not all(faults)  # the rate-0.5 rule both fired and held back
        assert parent._faults_in.decisions == alone._faults_in.decisions  # type: ignore[attr-defined]


def test_a_forks_stored_pages_stay_in_the_fork() -> None:
    with make_sim() as parent:
        parent.reset(SPEC, seed=1)
        branch = parent.fork()
        first = branch.step(call("list"))
        cursor = first.meta["next_cursor"]
        assert first.fault is not None and first.fault.kind == "pagination" and cursor
        later = branch.step(call("list", cursor=cursor))
        assert (later.source, later.meta["page"]) == ("cache", 2)  # the fork's own store serves it
        real = parent.step(call("list", cursor=cursor))
        assert "page" not in real.meta and real.source == "world_model"  # the parent never stored it
        assert real.fault is not None and real.fault.detail["eligible_call"] == 1
        branch.close()


def test_what_a_fork_saw_is_never_replayed_to_the_parent_as_stale() -> None:
    spec = WorldSpec(domain="mcp", tools=TOOLS,
                     controls=ControlSpec(faults=[FaultRule(kind="stale", schedule=[2], tools=["search"])]))
    with make_sim() as parent:
        parent.reset(spec, seed=4)
        with parent.fork() as branch:
            branch.step(SEARCHES[0])
            replayed = branch.step(SEARCHES[0])
            assert (replayed.source, replayed.meta["stale_from_turn"]) == ("cache", 1)
        parent.step(SEARCHES[1])
        fresh = parent.step(SEARCHES[0])  # stale is due, but the parent never saw this call
    assert fresh.source == "world_model" and fresh.fault is None
    assert fresh.meta["fault_without_effect"] == "stale"


def test_fork_before_reset_is_an_error() -> None:
    with pytest.raises(AgentWorldError, match=r"fork\(\) before reset"):
        make_sim().fork()


# -- the real environment is out of a fork's reach ----------------------------------------------


OPENED: list[CounterEnvironment] = []


class CounterEnvironment:
    """A real in-process environment: ``add N`` changes it, ``get`` reads it."""

    def __init__(self, seed: int) -> None:
        self.value, self.actions, self.closed = 0, [], False
        OPENED.append(self)

    def initial_observation(self) -> str:
        return "count=0"

    def step(self, action: str) -> str:
        self.actions.append(action)
        verb, _, arg = action.partition(" ")
        self.value += int(arg) if verb == "add" else 0
        return f"count={self.value}"

    def close(self) -> None:
        self.closed = True


def open_counter(seed: int = 0) -> CounterEnvironment:
    return CounterEnvironment(seed)


@pytest.fixture
def counter() -> Iterator[DomainRegistry]:
    register_domain(DomainPlugin(name="forkcounter", display="Counter",
                                 environment=f"{__name__}:open_counter"))
    OPENED.clear()
    yield DomainRegistry({"forkcounter": Domain(name="forkcounter", display="Counter",
                                                judge_system_prompt="J.", system_prompt="Count.")})
    OPENED.clear()
    unregister_domain("forkcounter")


def test_a_fork_never_executes_on_the_real_environment(counter: DomainRegistry) -> None:
    model = ScriptedBackend(default="<predicted_observation>\ncount=?\n</predicted_observation>")
    router = Router("real", domain="forkcounter")
    spec = WorldSpec(domain="forkcounter", initial_state="count=0")
    with Simulator(model, router=router, domains=counter) as parent:
        parent.reset(spec, seed=2)
        assert parent.step("add 3").source == "real"
        with parent.fork() as branch:
            imagined = [branch.step(a) for a in ("add 5", "add 7", "get")]
            assert branch.router is not None and branch.router.route("forkcounter", "get") == "model"
            with pytest.raises(AgentWorldError, match="never executes on the real environment"):
                asyncio.run(branch.router.execute("add 1"))
        assert [r.source for r in imagined] == ["world_model"] * 3
        assert OPENED[0].actions == ["add 3"] and OPENED[0].value == 3
        assert (router.real_steps, router.diverged) == (1, False)
        after = parent.step("get")
        assert (after.source, after.observation) == ("real", "count=3")
    router.close()
    with Simulator(None, router=Router("real", domain="forkcounter"), domains=counter) as modelless:
        modelless.reset(spec)
        with modelless.fork() as branch, pytest.raises(BackendError, match="no world model and no real"):
            branch.step("add 1")
    assert len(OPENED) == 1 and OPENED[0].actions == ["add 3", "get"]  # the model-less fork opened none


@pytest.mark.sandbox
@pytest.mark.skipif(bool(missing_tools()) or shutil.which("tmux") is None, reason="needs bubblewrap and tmux")
def test_a_fork_of_a_terminal_episode_never_runs_the_sandbox() -> None:
    def keys(line: str) -> list[dict[str, Any]]:
        return [{"keystrokes": line + "\n", "duration": 1.0}]

    model = ScriptedBackend(default="<predicted_observation>\nroot@x:/app# touch imagined.txt\n"
                                    "root@x:/app#\n</predicted_observation>")
    router = Router(seed=5)
    with Simulator(model, router=router, ledger=False) as parent:
        parent.reset(WorldSpec(domain="terminal"), seed=5)
        assert parent.step(keys("echo real > real.txt")).source == "real"
        with parent.fork() as branch:
            assert branch.step(keys("touch imagined.txt")).source == "world_model"
        listing = parent.step(keys("ls"))
    router.close()
    assert listing.source == "real" and router.real_steps == 2
    assert "real.txt" in listing.observation and "imagined.txt" not in listing.observation


# -- check_env's fork check ------------------------------------------------------------------------


class LeakyLedgerFork(Simulator):
    def fork(self) -> Simulator:
        child = super().fork()
        child._ledger = self._ledger
        return child


class LeakyFaultsFork(Simulator):
    def fork(self) -> Simulator:
        child = super().fork()
        child._faults_in = self._faults_in
        return child


class LeakyHistoryFork(Simulator):
    def fork(self) -> Simulator:
        child = super().fork()
        child._history = self._history
        return child


def test_check_env_passes_a_sound_fork() -> None:
    report = check_env(make_sim, SEARCHES[:4], seed=3, spec=SPEC)
    assert report.notes[-1] == "fork: 10 steps of forks left the parent's 4 results unchanged"


@pytest.mark.parametrize("broken", [LeakyLedgerFork, LeakyFaultsFork, LeakyHistoryFork])
def test_check_env_fails_a_fork_that_shares_state_with_its_parent(broken: type[Simulator]) -> None:
    def factory() -> Simulator:
        return broken(ScriptedBackend(default=answer), ledger_factory=lambda spec: CountingLedger())

    with pytest.raises(EnvCheckError, match=r"fork: stepping forks changed the parent's step \d under seed"):
        check_env(factory, SEARCHES[:4], seed=3, spec=SPEC)


def test_check_env_fails_a_fork_that_reaches_the_real_environment(counter: DomainRegistry) -> None:
    class RealFork(Simulator):
        def fork(self) -> Simulator:
            child = super().fork()
            child.router = self.router
            return child

    def factory() -> Simulator:
        return RealFork(ScriptedBackend(default="<predicted_observation>\n?\n</predicted_observation>"),
                        router=Router("real", domain="forkcounter"), domains=counter)

    spec = WorldSpec(domain="forkcounter")
    with pytest.raises(EnvCheckError, match="fork: a fork taken before step 1 executed an action on the"):
        check_env(factory, ["add 1", "get"], spec=spec)

"""Sim-to-real routing for any domain: the router runs ``PLUGIN.environment`` under ``PLUGIN.routing``.

The domain here is a tiny counter defined in this file (a real in-process environment and real
routing rules, registered like a user's domain package); only the world model is scripted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.domains.base import DomainPlugin, RouteDecision, plugins, register_domain, unregister_domain
from agentworld.domains.registry import Domain, DomainRegistry
from agentworld.errors import AgentWorldError
from agentworld.models.scripted import ScriptedBackend
from agentworld.sim import Simulator, WorldSpec
from agentworld.sim.router import Router

OPENED: list[CounterEnvironment] = []


class CounterEnvironment:
    """A counter: ``get``, ``add N``, ``open`` (a prompt that waits for input until ``close``)."""

    def __init__(self, seed: int, start: int = 0) -> None:
        self.seed, self.value, self.awaiting_input, self.closed = seed, start, False, False
        self.actions: list[str] = []
        OPENED.append(self)

    def initial_observation(self) -> str:
        return f"count={self.value}"

    def step(self, action: str) -> str:
        self.actions.append(action)
        verb, _, arg = action.partition(" ")
        if verb == "add":
            self.value += int(arg)
        self.awaiting_input = (self.awaiting_input or verb == "open") and verb != "close"
        return f"count={self.value}" + (" >" if self.awaiting_input else "")

    def close(self) -> None:
        self.closed = True


def open_counter(seed: int = 0, **options: int) -> CounterEnvironment:
    return CounterEnvironment(seed, **options)


def decide(action: str) -> RouteDecision:
    verb = action.split(" ", 1)[0]
    if verb in ("get", "add", "open", "close"):
        return RouteDecision("real", f"{verb} is local")
    if verb == "wait":
        return RouteDecision("model", "a wait follows the previous step", side_effects=False, follow=True)
    if verb == "peek":
        return RouteDecision("model", "peek reads a remote counter", side_effects=False)
    return RouteDecision("model", f"{verb} changes a remote counter")


@pytest.fixture
def counter() -> Iterator[str]:
    register_domain(DomainPlugin(name="counter", display="Counter", environment=f"{__name__}:open_counter",
                                 routing=f"{__name__}:decide"))
    register_domain(DomainPlugin(name="sketch", display="Sketch",
                                 real_note="drawings exist only in the model"))
    OPENED.clear()
    yield "counter"
    OPENED.clear()
    unregister_domain("counter")
    unregister_domain("sketch")


def test_the_domains_rules_route_and_a_model_step_with_side_effects_ends_real_steps(counter: str) -> None:
    router = Router(seed=3)
    assert router.route(counter, "get") == "real"
    assert asyncio.run(router.execute("add 2")) == "count=2"
    assert (OPENED[0].seed, router.real_steps) == (3, 1)
    assert router.route(counter, "wait") == "real"  # follows the previous (real) step
    assert router.route(counter, "peek") == "model"
    assert router.route(counter, "wait") == "model"
    assert not router.diverged  # peek only reads: the real counter still matches
    assert router.route(counter, "get") == "real"
    assert router.route(counter, "push 5") == "model"
    assert router.diverged
    assert router.decide(counter, "get").reason == "an earlier model step changed the world"
    router.reset(seed=4)
    assert OPENED[0].closed and not router.diverged
    assert router.route(counter, "get") == "real"
    assert asyncio.run(router.execute("get")) == "count=0"  # a fresh environment for the new episode
    assert OPENED[1].seed == 4
    router.close()
    assert OPENED[1].closed


def test_a_program_waiting_for_input_gets_every_step(counter: str) -> None:
    router = Router(environment_options={"start": 10})
    assert router.route(counter, "open") == "real"
    assert asyncio.run(router.execute("open")) == "count=10 >"
    busy = router.decide(counter, "push 1")
    assert (busy.route, busy.reason) == ("real", "input to a program still running in the real environment")
    asyncio.run(router.execute("close"))
    assert router.route(counter, "push 1") == "model"
    router.close()


def test_policies_real_and_model_and_a_domain_without_an_environment(counter: str) -> None:
    assert Router("real").route(counter, "push 1") == "real"
    assert Router("model").route(counter, "get") == "model"
    assert Router().route("sketch", "draw a cat") == "model"
    assert not OPENED  # nothing was executed, so nothing was opened
    with pytest.raises(AgentWorldError, match=r"'sketch' has no real environment \(drawings exist only"):
        Router("real", domain="sketch")
    with pytest.raises(AgentWorldError, match="'sketch' has no real environment"):
        Router("real").route("sketch", "draw a cat")


def test_the_simulator_sends_the_row_text_to_the_real_environment(counter: str) -> None:
    domains = DomainRegistry({counter: Domain(name=counter, display="Counter", judge_system_prompt="Judge.",
                                              system_prompt="Simulate a counter.")})
    model = ScriptedBackend([f"<predicted_observation>\ncount={n}\n</predicted_observation>" for n in (7, 8)])
    router = Router(domain=counter)
    sim = Simulator(model, router=router, domains=domains)
    try:
        assert sim.reset(WorldSpec(domain=counter, initial_state="count=0"), seed=9) == "count=0"
        real = sim.step("add 3")
        imagined = sim.step("push 4")
        after = sim.step("get")
    finally:
        sim.close()
        router.close()
    assert (real.source, real.observation) == ("real", "count=3")
    assert (imagined.source, imagined.observation) == ("world_model", "count=7")
    assert (after.source, after.observation) == ("world_model", "count=8")  # the push may have changed it
    assert OPENED[0].actions == ["add 3"] and OPENED[0].seed == 9
    assert "count=3" in model.calls[0].messages[2].content  # the real turn is in the model's history


def test_cli_route_real_for_a_domain_without_an_environment_is_one_clear_error() -> None:
    prompt_only = next(p.name for p in plugins().values() if p.environment is None)
    result = CliRunner().invoke(app, ["shell", "--domain", prompt_only, "--route", "real", "--model", "none"],
                                input=":quit\n")
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and f"domain {prompt_only!r} has no real environment" in lines[0], result.output

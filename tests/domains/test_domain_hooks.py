"""A domain's own actions, ledger and fault template drive the simulator, the shell and rollouts.

The domain is defined here, as a user's package would define it (``DomainPlugin`` with references);
nothing in ``sim/``, ``serve/`` or ``train/`` knows it. Only the world model is scripted.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from agentworld.domains.base import DomainPlugin, register_domain, unregister_domain
from agentworld.domains.hooks import ActionError, DomainActions, ParsedAction, RawAction
from agentworld.domains.ledger import Contradiction
from agentworld.domains.registry import Domain, DomainRegistry
from agentworld.domains.spec import InjectedFault, WorldSpec
from agentworld.models.scripted import ScriptedBackend
from agentworld.serve.shell import run_shell
from agentworld.sim import ControlSpec, FaultRule, Simulator
from agentworld.sim.agent import agent_system_prompt, parse_agent_action

NAME = "tally"


class TallyActions(DomainActions):
    """``add N`` to a tally; the user turn is ``ADD N``; the first turn carries the starting tally."""

    shape = "add N"
    initial_in_action = True

    def parse(self, action: RawAction) -> ParsedAction:
        match = re.fullmatch(r"add (-?\d+)", str(action).strip())
        if match is None:
            raise ActionError(f"tally action must look like {self.shape!r}")
        return ParsedAction(payload=int(match.group(1)), key=f"add {match.group(1)}", tool="add")

    def render(self, parsed: ParsedAction, initial: str | None = None) -> str:
        return (f"[start {initial}] " if initial is not None else "") + f"ADD {parsed.payload}"

    def initial_observation(self, spec: WorldSpec, seed: int) -> str:
        return f"tally={spec.initial_state or seed}"

    def from_line(self, line: str) -> Any:
        return f"add {line.strip()}" if line.strip() else None

    def agent_action(self, value: Any) -> Any:
        return f"add {value['add']}" if isinstance(value, dict) and "add" in value else None

    def agent_help(self, spec: WorldSpec) -> str:
        return 'Reply {"add": N}.'


ACTIONS = TallyActions()


class TallyLedger:
    """Knows the tally: a prediction must show the sum of everything added."""

    def __init__(self, start: int) -> None:
        self.value = start

    def summary(self) -> str:
        return f"tally is {self.value}"

    def check(self, action: str, observation: str) -> list[Contradiction]:
        want = self.value + int(action.rsplit(" ", 1)[1])
        if observation != f"tally={want}":
            return [Contradiction(kind="tally", message="wrong tally", expected=f"tally={want}",
                                  found=observation)]
        return []

    def repair(self, action: str, observation: str, found: list[Contradiction]) -> str | None:
        return found[0].expected

    def update(self, action: str, observation: str) -> None:
        self.value = int(observation.split("=")[1])


def open_ledger(spec: WorldSpec | None) -> TallyLedger:
    return TallyLedger(int(spec.initial_state or 0) if spec else 0)


def render_fault(fault: InjectedFault, parsed: ParsedAction, screens: Sequence[str]) -> str:
    return f"{screens[-1]} (tally busy: {fault.kind})"


@pytest.fixture
def tally() -> Iterator[DomainRegistry]:
    register_domain(DomainPlugin(name=NAME, display="Tally", actions=f"{__name__}:ACTIONS",
                                 ledger=f"{__name__}:open_ledger", faults=f"{__name__}:render_fault"))
    yield DomainRegistry({NAME: Domain(name=NAME, display="Tally", system_prompt="Simulate a tally.",
                                       judge_system_prompt="Judge.")})
    unregister_domain(NAME)


def wrap(text: str) -> str:
    return f"<predicted_observation>\n{text}\n</predicted_observation>"


def test_the_simulator_parses_renders_and_checks_with_the_domains_hooks(tally: DomainRegistry) -> None:
    model = ScriptedBackend([wrap("tally=9"), wrap("tally=8"), wrap("tally=99"), wrap("tally=98")])
    sim = Simulator(model, domains=tally)
    assert sim.reset(WorldSpec(domain=NAME, initial_state="5"), seed=1) == "tally=5"
    first = sim.step("add 3")
    assert model.calls[0].messages[-1].content == "[start tally=5] ADD 3"  # the first turn carries the start
    assert "# Initial state" not in model.calls[0].messages[0].content
    assert "tally is 5" in model.calls[0].messages[0].content  # the domain's ledger summary
    assert (first.observation, first.contradictions, first.repaired) == ("tally=8", ["wrong tally"], True)
    second = sim.step("add 1")
    assert model.calls[2].messages[-1].content == "ADD 1"
    assert (second.observation, second.repaired) == ("tally=9", True)  # re-asked, then repaired
    with pytest.raises(ActionError, match="tally action must look like 'add N'"):
        sim.step("subtract 1")
    sim.close()


def test_an_error_fault_without_a_model_uses_the_domains_template(tally: DomainRegistry) -> None:
    spec = WorldSpec(domain=NAME, initial_state="2",
                     controls=ControlSpec(faults=[FaultRule(kind="timeout", count=1)]))
    sim = Simulator(None, domains=tally)
    sim.reset(spec)
    result = sim.step("add 1")
    assert (result.source, result.observation) == ("template", "tally=2 (tally busy: timeout)")
    sim.close()


def test_the_shell_and_the_rollout_agent_use_the_domains_action_format(tally: DomainRegistry) -> None:
    out = io.StringIO()
    sim = Simulator(ScriptedBackend([wrap("tally=4")]), domains=tally)
    steps = run_shell(sim, io.StringIO("\n4\n:quit\n"), out, spec=WorldSpec(domain=NAME), seed=0)
    assert steps == 1 and "tally=4" in out.getvalue()
    assert parse_agent_action('I will add. {"add": 2}', NAME) == "add 2"
    assert 'Reply {"add": N}.' in agent_system_prompt(WorldSpec(domain=NAME), "count")

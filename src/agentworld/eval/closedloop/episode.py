"""One task's episodes in ``eval closed-loop``: the agent in the real environment, and in the simulator.

Both start from the same state: the real environment runs the setup, and the simulator is given the
real environment's first screen (as its world spec's initial state: the repository tree, the start
page) and the setup's *real* observations (a router answers the setup steps with them), so both
histories start identical and only what the agent then does and sees can differ. The simulator runs
under an *arm*: with or without the state ledger, with or without the domain's sim-to-real router (then
the steps its rules call safe run in a real environment of their own, set up the same way). After
the episode the task's check runs on either side: for real on the final real state, imagined by the
simulator on its own. Real environments block (a shell), so their calls run in worker threads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from agentworld.domains.hooks import ActionError, domain_actions
from agentworld.eval.closedloop.agent import Policy, PolicyFactory
from agentworld.eval.closedloop.tasks import ClosedLoopTask, succeeded
from agentworld.models.base import ChatBackend
from agentworld.models.cache import ResponseCache
from agentworld.schema import strip_marker

ARMS: tuple[str, ...] = ("bare", "ledger", "router", "ledger+router")
"""Simulator settings compared: neither, the state ledger, the sim-to-real router, both."""


@dataclass(frozen=True)
class Step:
    """One action of an episode (as the domain renders it, and as given) and what it showed."""

    action: str
    raw: Any
    observation: str
    source: str = "real"


@dataclass(frozen=True)
class Trajectory:
    """One episode: the setup's observations, the agent's steps, the check's observation, the outcome."""

    initial: str
    setup: list[tuple[str, str]]
    steps: list[Step]
    check: str | None
    success: bool
    ended: str
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Trajectory:
        return cls(**{**data, "setup": [tuple(p) for p in data["setup"]],
                      "steps": [Step(**s) for s in data["steps"]]})


def _render(domain: str, raw: Any) -> str:
    actions = domain_actions(domain)
    return actions.render(actions.parse(raw))


class Fixed:
    """A policy replaying given actions (the real environment re-run on the simulator's actions)."""

    def __init__(self, raws: Sequence[Any]) -> None:
        self._raws = list(raws)

    async def act(self, observation: str) -> Any | None:
        return self._raws.pop(0) if self._raws else None


async def _drive(task: ClosedLoopTask, policy: Policy, first: str, step: Any) -> tuple[list[Step], str,
                                                                                       str | None]:
    """The agent's loop: act, step, until it is done, errs or runs out of steps."""
    steps: list[Step] = []
    observation = first
    for _ in range(task.max_steps):
        try:
            raw = await policy.act(observation)
        except ActionError as exc:
            return steps, "agent_error", str(exc)
        if raw is None:
            return steps, "done", None
        text = _render(task.domain, raw)
        observation, source = await step(raw, text)
        steps.append(Step(action=text, raw=raw, observation=observation, source=source))
    return steps, "max_steps", None


def _outcome(task: ClosedLoopTask, check: str | None, last: str) -> bool:
    return succeeded(task, check if check is not None else last)


async def run_real(task: ClosedLoopTask, start: PolicyFactory, seed: int) -> Trajectory:
    """The agent's episode in a fresh real environment, then the check on its final state."""
    from agentworld.sim.router import environment_of

    factory = environment_of(task.domain)[0]
    assert factory is not None, "tasks are checked to have a real environment"
    env = await asyncio.to_thread(factory, seed)

    async def step(raw: Any, text: str) -> tuple[str, str]:
        return strip_marker(await asyncio.to_thread(env.step, text)), "real"

    try:
        initial = await asyncio.to_thread(env.initial_observation)
        setup = []
        for raw in task.setup:
            setup.append((_render(task.domain, raw), (await step(raw, _render(task.domain, raw)))[0]))
        first = setup[-1][1] if setup else initial
        steps, ended, error = await _drive(task, start(task, initial, setup), first, step)
        check = None if task.check is None else (await step(task.check, _render(task.domain, task.check)))[0]
        last = steps[-1].observation if steps else first
        return Trajectory(initial, setup, steps, check, _outcome(task, check, last), ended, error)
    finally:
        await asyncio.to_thread(env.close)


class SetupRouter:
    """Answers the first ``len(setup)`` steps with the real setup's observations, then defers.

    The rest go to ``inner`` (the domain's router, in the router arms) or to the model.
    """

    def __init__(self, observations: Sequence[str], inner: Any = None) -> None:
        self._pending, self.inner = list(observations), inner
        self._replaying = False

    def route(self, domain: str, action: str) -> str:
        self._replaying = bool(self._pending)
        if self._replaying:
            return "real"
        return str(self.inner.route(domain, action)) if self.inner is not None else "model"

    async def execute(self, action: str) -> str:
        if self._replaying:
            return self._pending.pop(0)
        return str(await self.inner.execute(action))

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()


def _set_up(task: ClosedLoopTask) -> Any:
    """The domain's environment factory, with the task's setup run in each environment it opens."""
    from agentworld.sim.router import environment_of

    factory = environment_of(task.domain)[0]
    assert factory is not None

    def open_set_up(seed: int, **options: Any) -> Any:
        env = factory(seed, **options)
        env.initial_observation()
        for raw in task.setup:
            env.step(_render(task.domain, raw))
        return env
    return open_set_up


async def run_sim(task: ClosedLoopTask, start: PolicyFactory, model: ChatBackend, arm: str,
                  real: Trajectory, seed: int, cache: ResponseCache | None = None) -> Trajectory:
    """The agent's episode in the simulator under ``arm``, from the real setup's state; then the
    check, imagined (or, in a router arm, run where the router sends it)."""
    from agentworld.sim.router import Router
    from agentworld.sim.session import Simulator
    from agentworld.sim.types import WorldSpec

    inner = Router("rules", seed=seed, environment_factory=_set_up(task)) if "router" in arm else None
    router = SetupRouter([obs for _, obs in real.setup], inner)
    sim = Simulator(model, ledger="ledger" in arm, cache=cache, router=router)

    async def step(raw: Any, text: str) -> tuple[str, str]:
        result = await sim.astep(raw)
        return result.observation, result.source

    try:
        spec = WorldSpec(domain=task.domain, initial_state=real.initial, **task.spec)
        initial = await sim.areset(spec, seed=seed)
        setup = [(text, (await step(raw, text))[0])
                 for raw, text in ((r, _render(task.domain, r)) for r in task.setup)]
        first = setup[-1][1] if setup else initial
        steps, ended, error = await _drive(task, start(task, initial, setup), first, step)
        check = None if task.check is None else (await step(task.check, ""))[0]
        last = steps[-1].observation if steps else first
        real_steps = sum(s.source == "real" for s in steps)
        return Trajectory(initial, setup, steps, check, _outcome(task, check, last), ended, error,
                          extra={"real_routed": real_steps})
    finally:
        await sim.aclose()
        sim.close()
        await asyncio.to_thread(router.close)


async def replay_real(task: ClosedLoopTask, sim: Trajectory, seed: int) -> Trajectory:
    """The real environment's answers to the simulator's actions (a fresh environment, same setup)."""
    raws = [s.raw for s in sim.steps]
    return await run_real(task, lambda t, i, s: Fixed(raws), seed)

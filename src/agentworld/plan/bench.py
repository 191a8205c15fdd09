"""Measure the planner on a domain's futile-action tasks: real steps wasted, tasks solved, with and without.

Why real execution on both sides: what a planner saves is steps that fail *for real*, so every
arm runs its chosen actions in a fresh real environment through the episode's router, and success
is checked on that environment afterwards. The tasks, their environments and their success checks
are the domain's (``DomainPlugin.plan_tasks``, a :class:`~agentworld.domains.plan_tasks.PlanSuite`;
the terminal ships eleven). The world models the planner imagines with are the caller's;
:func:`record_truth` and :func:`truth_rows` give the mock server what it needs to replay ground
truth: every candidate's real observation, under the exact messages the planner's forks send
(captured from a run against a scripted model that answers the recorded truth).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentworld.domains import DEFAULT_DOMAIN
from agentworld.domains.base import plugin_of, plugins, resolve
from agentworld.domains.hooks import domain_actions
from agentworld.domains.plan_tasks import PlanSuite
from agentworld.errors import AgentWorldError
from agentworld.models.base import ChatBackend, ChatRequest
from agentworld.models.scripted import ScriptedBackend
from agentworld.plan.agents import ScriptedAgent
from agentworld.plan.planner import Planner
from agentworld.plan.scorers import RuleCheck, RuleScorer
from agentworld.sim.router import Router
from agentworld.sim.session import Simulator
from agentworld.sim.types import WorldSpec

__all__ = ["Outcome", "plan_suite", "record_truth", "run_task", "summarize", "task_rule", "truth_rows"]

SEED = 0


def plan_suite(domain: str = DEFAULT_DOMAIN) -> PlanSuite:
    """The futile-action tasks ``domain`` ships (its plugin's ``plan_tasks``)."""
    found = plugin_of(domain)
    if not found.plan_tasks:
        offering = sorted(name for name, p in plugins().items() if p.plan_tasks)
        raise AgentWorldError(f"domain {domain!r} ships no futile-action tasks; these do: "
                              f"{', '.join(offering)}")
    suite = resolve(found.plan_tasks)
    if not isinstance(suite, PlanSuite):
        raise AgentWorldError(f"{found.plan_tasks} is not a PlanSuite")
    return suite


def task_rule(task: Any) -> RuleCheck:
    """The rule the planner scores imagined observations by: no error shown, back at the prompt."""
    return RuleCheck(errors=tuple(task.errors), end_at_prompt=True)


def record_truth(task: Any, domain: str = DEFAULT_DOMAIN, seed: int = SEED) -> list[str]:
    """Every candidate's real observation, each run in a fresh environment after the setup."""
    suite = plan_suite(domain)
    screens = []
    for candidate in task.candidates:
        env = suite.open_environment(task, seed)
        try:
            screens.append(env.step(candidate.action()))
        finally:
            env.close()
    return screens


def truth_rows(task: Any, screens: Sequence[str], domain: str = DEFAULT_DOMAIN,
               seed: int = SEED) -> list[dict[str, Any]]:
    """AgentWorldBench rows whose messages are exactly what the planner's forks send, with the real screens.

    The messages are captured from a plan against a scripted model that answers each candidate's
    recorded screen, so the rows stay right whatever the simulator puts in its prompt.
    """
    actions = domain_actions(domain)
    spec = WorldSpec(domain=domain)
    initial = actions.initial_observation(spec, seed)
    by_text = {actions.render(actions.parse(c.action()), initial): screen
               for c, screen in zip(task.candidates, screens, strict=True)}
    seen: list[ChatRequest] = []

    def answer(request: ChatRequest) -> str:
        seen.append(request)
        truth = by_text.get(request.messages[-1].content, "")
        return f"<predicted_observation>\n{truth}\n</predicted_observation>"

    async def capture() -> None:
        sim = Simulator(ScriptedBackend(default=answer))
        await sim.areset(spec, seed=seed)
        await Planner(RuleScorer(task_rule(task)), k=len(task.candidates)).aplan(
            sim, [c.action() for c in task.candidates])

    asyncio.run(capture())
    rows = []
    for i, request in enumerate(seen):
        system, *turns = request.messages
        prompt = [m.content for m in turns if m.role == "user"]
        response = [m.content for m in turns if m.role == "assistant"] + [by_text[prompt[-1]]]
        rows.append({"task": f"plan/{domain}", "id": f"plan-{task.name}-{i}", "system_str": system.content,
                     "prompt": prompt, "response": response, "turn_idx": len(prompt)})
    return rows


@dataclass(frozen=True)
class Outcome:
    """One task under one arm: the real steps taken, how many of them were futile, whether it was solved."""

    task: str
    arm: str
    real_steps: int
    futile_steps: int
    solved: bool
    order: tuple[int, ...]

    @property
    def wasted(self) -> int:
        """Real steps that did not solve the task."""
        return self.real_steps - int(self.solved)


async def run_task(task: Any, arm: str, model: ChatBackend | None, *, domain: str = DEFAULT_DOMAIN,
                   budget: int = 1, samples: int = 1, max_tokens: int | None = None) -> Outcome:
    """Run ``task`` for real: the agent's candidates in its order (``model`` None) or the planner's.

    The scripted agent proposes the futile candidate first; it takes candidates in order until the
    task is solved or ``budget`` real steps are spent. ``max_tokens`` bounds each imagined observation
    (a small model that loops would otherwise generate to the end of its context).
    """
    suite = plan_suite(domain)
    opened: list[Any] = []

    def factory(seed: int, **options: Any) -> Any:
        opened.append(suite.open_environment(task, seed, **options))
        return opened[-1]

    router = Router("real", environment_factory=factory)
    sim = Simulator(model, router=router)
    actions = [c.action() for c in task.candidates]
    order = list(range(len(actions)))
    try:
        await sim.areset(WorldSpec(domain=domain, max_tokens=max_tokens), seed=SEED)
        if model is not None:
            planner = Planner(RuleScorer(task_rule(task)), agent=ScriptedAgent(tuple(actions)),
                              k=len(actions), samples=samples)
            plan = await planner.aplan(sim)
            order = [c.index for c in plan.ranked]
        screens: list[str] = []
        futile, done = 0, False
        for index in order[:budget]:
            screens.append((await sim.astep(actions[index])).observation)
            futile += int(not task.candidates[index].works)
            done = await asyncio.to_thread(suite.solved, task, opened[-1], screens[-1:])
            if done:
                break
        return Outcome(task=task.name, arm=arm, real_steps=len(screens), futile_steps=futile, solved=done,
                       order=tuple(order))
    finally:
        await sim.aclose()
        sim.close()
        router.close()


def summarize(outcomes: Sequence[Outcome]) -> dict[str, int]:
    """Totals of one arm: tasks, solved, real steps, wasted steps, futile actions run."""
    return {"tasks": len(outcomes), "solved": sum(o.solved for o in outcomes),
            "real_steps": sum(o.real_steps for o in outcomes), "wasted": sum(o.wasted for o in outcomes),
            "futile": sum(o.futile_steps for o in outcomes)}

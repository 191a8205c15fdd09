"""Measure the planner on the futile-action tasks: real steps wasted and tasks solved, with and without it.

Why real execution on both sides: what a planner saves is steps that fail *for real*, so every
arm runs its chosen actions in a fresh sandbox through the episode's router, and success is
checked on that sandbox afterwards (:mod:`agentworld.plan.futile`). The world models the planner
imagines with are the caller's; :func:`record_truth` and :func:`truth_rows` give the mock server
what it needs to replay ground truth: every candidate's real screen, under the exact messages the
planner's forks send (captured from a run against a scripted model that answers the recorded truth).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentworld.domains.actions import PROMPT_RE
from agentworld.domains.hooks import domain_actions
from agentworld.models.base import ChatBackend, ChatRequest
from agentworld.models.scripted import ScriptedBackend
from agentworld.plan.agents import ScriptedAgent
from agentworld.plan.futile import FutileTask
from agentworld.plan.planner import Planner
from agentworld.plan.scorers import RuleScorer
from agentworld.sim.router import Router
from agentworld.sim.session import Simulator
from agentworld.sim.types import WorldSpec

__all__ = ["Outcome", "record_truth", "run_task", "summarize", "truth_rows"]

DOMAIN = "terminal"
SEED = 0
CHECK_MARK = "CHECK_$((6*7))"
"""Printed by the success check; the screen shows ``CHECK_42`` only if it ran (the echo shows the $)."""


def open_task_environment(task: FutileTask, seed: int = SEED, **options: Any) -> Any:
    """A fresh sandboxed terminal with the task's setup done and the screen cleared."""
    from agentworld.domains.terminal.env import open_environment

    env = open_environment(seed, **options)
    env.initial_observation()
    env.step([{"keystrokes": f"{task.setup}; clear\n", "duration": 10.0}])
    return env


def solved(task: FutileTask, env: Any, observations: Sequence[str]) -> bool:
    """The real success check: back at the prompt, ``expect`` shown as a line, ``check`` succeeds."""
    actions = domain_actions(DOMAIN)
    lines = (observations[-1].rstrip().splitlines() or [""]) if observations else [""]
    if not actions.is_prompt_line(lines[-1]):
        return False
    shown = {line.strip() for text in observations for line in text.splitlines() if not PROMPT_RE.match(line)}
    if task.expect and task.expect not in shown:
        return False
    screen = env.step([{"keystrokes": f"{{ {task.check}; }} >/dev/null 2>&1 && echo {CHECK_MARK}\n",
                        "duration": 5.0}])
    return any(line.strip() == "CHECK_42" for line in screen.splitlines())


def record_truth(task: FutileTask, seed: int = SEED) -> list[str]:
    """Every candidate's real screen, each run in a fresh sandbox after the setup."""
    screens = []
    for candidate in task.candidates:
        env = open_task_environment(task, seed)
        try:
            screens.append(env.step(candidate.action()))
        finally:
            env.close()
    return screens


def truth_rows(task: FutileTask, screens: Sequence[str], seed: int = SEED) -> list[dict[str, Any]]:
    """AgentWorldBench rows whose messages are exactly what the planner's forks send, with the real screens.

    The messages are captured from a plan against a scripted model that answers each candidate's
    recorded screen, so the rows stay right whatever the simulator puts in its prompt.
    """
    actions = domain_actions(DOMAIN)
    spec = WorldSpec(domain=DOMAIN)
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
        await Planner(RuleScorer(task.rule), k=len(task.candidates)).aplan(
            sim, [c.action() for c in task.candidates])

    asyncio.run(capture())
    rows = []
    for i, request in enumerate(seen):
        system, *turns = request.messages
        prompt = [m.content for m in turns if m.role == "user"]
        response = [m.content for m in turns if m.role == "assistant"] + [by_text[prompt[-1]]]
        rows.append({"task": f"plan/{DOMAIN}", "id": f"plan-{task.name}-{i}", "system_str": system.content,
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


async def run_task(task: FutileTask, arm: str, model: ChatBackend | None, *, budget: int = 1,
                   samples: int = 1, opener: Callable[..., Any] = open_task_environment) -> Outcome:
    """Run ``task`` for real: the agent's candidates in its order (``model`` None) or the planner's.

    The scripted agent proposes the futile candidate first; it takes candidates in order until the
    task is solved or ``budget`` real steps are spent.
    """
    opened: list[Any] = []

    def factory(seed: int, **options: Any) -> Any:
        opened.append(opener(task, seed, **options))
        return opened[-1]

    router = Router("real", environment_factory=factory)
    sim = Simulator(model, router=router)
    actions = [c.action() for c in task.candidates]
    order = list(range(len(actions)))
    try:
        await sim.areset(WorldSpec(domain=DOMAIN), seed=SEED)
        if model is not None:
            planner = Planner(RuleScorer(task.rule), agent=ScriptedAgent(tuple(actions)), k=len(actions),
                              samples=samples)
            plan = await planner.aplan(sim)
            order = [c.index for c in plan.ranked]
        screens: list[str] = []
        futile, done = 0, False
        for index in order[:budget]:
            screens.append((await sim.astep(actions[index])).observation)
            futile += int(not task.candidates[index].works)
            done = await asyncio.to_thread(solved, task, opened[-1], screens[-1:])
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

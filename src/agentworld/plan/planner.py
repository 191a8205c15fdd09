"""Predict before acting: imagine each candidate action on forks of the live episode, then act on the best.

Why: an agent that runs the obvious action pays for it when it fails for real (a wasted step, or
worse, a hung terminal). Imagining it first costs model calls only: each candidate is stepped on
:meth:`Simulator.fork` copies — never on the real environment — for ``horizon`` steps (the agent
continues the imagined rollout), ``samples`` times with different seeds, and the imagined outcomes
are scored (a judge or the task's rule check). The winner then runs once, for real, through the
episode's own router. Every model call (world model, judge, agent) goes through one
:class:`ResponseCache`, so planning the same situation again sends nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentworld.domains.hooks import ActionError, domain_actions
from agentworld.errors import AgentWorldError
from agentworld.models.cache import ResponseCache
from agentworld.plan.agents import Agent
from agentworld.plan.records import ImaginedStep, PlanResult, RankedCandidate, Sample
from agentworld.plan.scorers import PlanContext, Scorer
from agentworld.sim.session import Simulator
from agentworld.sim.types import StepResult

__all__ = ["Decision", "Planner"]


@dataclass(frozen=True)
class Decision:
    """The plan and what the chosen action showed when it ran for real."""

    plan: PlanResult
    result: StepResult


class Planner:
    """Ranks candidate actions by imagined outcome (see the module docstring).

    Args:
        scorer: scores each imagined rollout (:class:`~agentworld.plan.scorers.JudgeScorer`,
            :class:`~agentworld.plan.scorers.RuleScorer`).
        agent: proposes candidates when the caller gives none, and continues rollouts when
            ``horizon`` > 1 (without one, a rollout is the candidate alone).
        k: at most this many candidates are imagined.
        horizon: imagined steps per rollout (the candidate, then the agent's).
        samples: rollouts per candidate; sample ``j`` uses seed ``episode seed + j``.
        concurrency: rollouts imagined at once.
        cache: the cache of every call (default: the episode's, else one kept by this planner).
        task: what the agent is trying to do (for the judge and the agent).
    """

    def __init__(self, scorer: Scorer, *, agent: Agent | None = None, k: int = 4, horizon: int = 1,
                 samples: int = 1, concurrency: int = 8, cache: ResponseCache | None = None,
                 task: str = "") -> None:
        if min(k, horizon, samples, concurrency) < 1:
            raise AgentWorldError(f"planner: k, horizon, samples and concurrency must be >= 1 (got k={k}, "
                                  f"horizon={horizon}, samples={samples}, concurrency={concurrency})")
        self.scorer, self.agent, self.task = scorer, agent, task
        self.k, self.horizon, self.samples, self.concurrency = k, horizon, samples, concurrency
        self.cache = cache

    def context(self, sim: Simulator) -> PlanContext:
        state = sim.state()
        initial = domain_actions(state.spec.domain).initial_observation(state.spec, state.seed)
        return PlanContext(domain=state.spec.domain, task=self.task, initial=initial,
                           history=tuple(state.history))

    async def aplan(self, sim: Simulator, candidates: Sequence[Any] | None = None) -> PlanResult:
        """Imagine every candidate and return them ranked best first; ``sim`` is left as it was.

        Raises:
            AgentWorldError: no candidates (none given, no agent or it proposed none), or a
                candidate that is not an action of the episode's domain.
        """
        if self.cache is None:  # not `or`: an empty cache is falsy (it has a length)
            self.cache = sim.cache if sim.cache is not None else ResponseCache()
        cache = self.cache
        context = self.context(sim)
        if candidates is None:
            if self.agent is None:
                raise AgentWorldError("planner: no candidate actions given and no agent to propose them")
            candidates = await self.agent.propose(context, self.k, cache)
        chosen = list(candidates)[: self.k]
        if not chosen:
            raise AgentWorldError("planner: no candidate actions to imagine (the agent proposed none)")
        actions = domain_actions(context.domain)
        for i, action in enumerate(chosen, 1):
            try:
                actions.parse(action)
            except ActionError as exc:
                raise AgentWorldError(f"candidate {i}: {exc}") from None
        gate = asyncio.Semaphore(self.concurrency)
        base = sim.state().seed
        jobs = [self._rollout(sim, context, action, base + j, gate, cache)
                for action in chosen for j in range(self.samples)]
        done = await asyncio.gather(*jobs)
        ranked = []
        for i, action in enumerate(chosen):
            samples = tuple(done[i * self.samples:(i + 1) * self.samples])
            score = sum(s.verdict.score for s in samples) / len(samples)
            ranked.append(RankedCandidate(index=i, action=action, score=score, samples=samples))
        ranked.sort(key=lambda c: (-c.score, c.index))
        return PlanResult(ranked=tuple(ranked), horizon=self.horizon, samples=self.samples,
                          scorer=self.scorer.name)

    async def aact(self, sim: Simulator, candidates: Sequence[Any] | None = None) -> Decision:
        """Plan, then take the best candidate for real through the episode's router (once)."""
        plan = await self.aplan(sim, candidates)
        return Decision(plan=plan, result=await sim.astep(plan.best.action))

    async def _rollout(self, sim: Simulator, context: PlanContext, action: Any, seed: int,
                       gate: asyncio.Semaphore, cache: ResponseCache) -> Sample:
        async with gate:
            fork = sim.fork(seed=seed)
            fork.cache = cache
            steps: list[ImaginedStep] = []
            current: Any = action
            try:
                for depth in range(self.horizon):
                    try:
                        result = await fork.astep(current)
                    except ActionError as exc:
                        steps.append(ImaginedStep(action=current, observation=f"invalid action: {exc}",
                                                  source="agent_error", is_error=True))
                        break
                    steps.append(ImaginedStep(action=current, observation=result.observation,
                                              source=result.source, is_error=result.is_error))
                    if depth + 1 == self.horizon or self.agent is None:
                        break
                    current = await self.agent.next_action(context, steps, seed, cache)
                    if current is None:
                        break
            finally:
                await fork.aclose()
            verdict = await self.scorer.score(context, steps, cache)
        return Sample(seed=seed, steps=tuple(steps), verdict=verdict)

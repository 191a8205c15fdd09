"""One task of ``eval agent-predictions``: the agent predicts, the action runs for real, the rule tier scores.

The real environment is the domain plugin's (``DomainPlugin.environment``), driven through its action
format (``DomainPlugin.actions``), so any domain with a real environment works. Its calls block (a
shell, a browser), so they run in a worker thread while other tasks' requests are in flight.

Resuming: every finished step is one journal row, every agent answer is in the response cache. A task
cut short is run again from its start in a fresh environment; its journaled steps are replayed for
real (to rebuild the environment's state) without asking the agent, the conversation carrying the
observations the agent saw the first time, so the next request is the one it would have been.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentworld.domains.hooks import ActionError, domain_actions
from agentworld.errors import AgentWorldError
from agentworld.eval.agentpred.prompt import (
    first_message,
    read_prediction,
    step_message,
    system_prompt,
    without_prediction,
)
from agentworld.eval.agentpred.tasks import PredictionTask
from agentworld.eval.rules.scores import score_rules
from agentworld.io import AsyncJournal
from agentworld.models.base import ChatBackend, ChatRequest
from agentworld.models.cache import ResponseCache
from agentworld.schema import BenchSample, Message, strip_marker

BASELINE_NAMES: tuple[str, ...] = ("empty", "repeat_previous")


@dataclass(frozen=True)
class AgentSettings:
    """How the agent is asked."""

    backend: ChatBackend
    model: str
    max_tokens: int
    temperature: float


def score_step(sample: BenchSample, predicted: str, previous: str) -> dict[str, Any]:
    """The rule-tier scores of a prediction and of the trivial baselines beside it.

    ``sample`` is the step as an AgentWorldBench row (the episode so far, the real observation as its
    truth), so the rules know what the session has shown, exactly as ``eval run`` scores a row.
    """
    domain, real = sample.domain, sample.ground_truth
    rule = score_rules(domain, predicted, real, sample)
    baselines = {"empty": score_rules(domain, "", real, sample),
                 "repeat_previous": score_rules(domain, previous, real, sample)}
    return {"rule": {"overall": rule.overall, "exact": rule.exact, "verified": rule.verified},
            "baselines": {name: {"overall": s.overall, "exact": s.exact} for name, s in baselines.items()}}


def _chosen_action(reply: str, domain: str) -> Any:
    """The action in a reply of an agent choosing its own (None: it said it is done).

    Raises:
        ActionError: the reply holds no action of the domain's form.
    """
    from agentworld.sim.agent import parse_agent_action

    return parse_agent_action(without_prediction(reply), domain)


class TaskRun:
    """Run one task: ``done`` journaled rows of this task (from an earlier run) are replayed."""

    def __init__(self, task: PredictionTask, agent: AgentSettings, cache: ResponseCache,
                 journal: AsyncJournal, seed: int, done: Sequence[dict[str, Any]],
                 advance: Callable[[], None]) -> None:
        self.task, self.agent, self.cache, self.journal = task, agent, cache, journal
        self.seed, self.done, self.advance = seed, list(done), advance
        self.scored = len(self.done)
        self.actions = domain_actions(task.domain)
        self.messages: list[Message] = []
        self._first: tuple[str, list[tuple[str, str]]] = ("", [])
        self.history: list[tuple[str, str]] = []
        """(action, observation) of the episode so far, as an AgentWorldBench row holds them."""

    def _render(self, action: Any) -> str:
        return self.actions.render(self.actions.parse(action))

    async def run(self) -> dict[str, Any]:
        """Run the task to its end in a fresh real environment and journal its closing row (returned)."""
        from agentworld.sim.router import environment_of

        factory = environment_of(self.task.domain)[0]
        assert factory is not None, "tasks are checked to have a real environment"
        env = await asyncio.to_thread(factory, self.seed)
        try:
            return await self._steps(env)
        finally:
            await asyncio.to_thread(env.close)

    async def _start(self, env: Any) -> str:
        """Show the initial observation and run the setup; returns the last observation shown."""
        from agentworld.domains.base import plugin_of

        initial = await asyncio.to_thread(env.initial_observation)
        setup: list[tuple[str, str]] = []
        self._first = (initial, setup)
        for action in self.task.setup:
            text = self._render(action)
            setup.append((text, strip_marker(await asyncio.to_thread(env.step, text))))
            self._record(action, text, setup[-1][1])
        goal = None if self.task.steps is not None else self.task.goal
        help_text = self.actions.agent_help(_spec(self.task.domain)) if goal is not None else ""
        system = system_prompt(plugin_of(self.task.domain).display, goal, help_text)
        self.messages = [Message(role="system", content=system)]
        return setup[-1][1] if setup else initial

    async def _steps(self, env: Any) -> dict[str, Any]:
        previous = await self._start(env)
        for index in range(self.task.max_steps):
            fixed = self.task.steps[index] if self.task.steps is not None else None
            shown = self._render(fixed) if fixed is not None else None
            content = step_message(previous, shown) if index else first_message(*self._first, shown)
            self.messages.append(Message(role="user", content=content))
            if index < len(self.done):
                row = self.done[index]
                self.messages.append(Message(role="assistant", content=row["reply"]))
                await asyncio.to_thread(env.step, row["action"])
                raw = fixed if fixed is not None else _chosen_action(row["reply"], self.task.domain)
                self._record(raw, row["action"], row["real"])
                previous = row["real"]
                continue
            request = ChatRequest(messages=tuple(self.messages), model=self.agent.model,
                                  max_tokens=self.agent.max_tokens, temperature=self.agent.temperature)
            reply = (await self.cache.call(self.agent.backend, request)).result.content
            self.messages.append(Message(role="assistant", content=reply))
            if shown is None:
                try:
                    chosen = _chosen_action(reply, self.task.domain)
                    shown = None if chosen is None else self._render(chosen)
                except ActionError as exc:
                    return await self._close("agent_error", index, str(exc))
                if shown is None:
                    return await self._close("done", index, None)
            try:
                real = strip_marker(await asyncio.to_thread(env.step, shown))
            except (AgentWorldError, OSError, ValueError) as exc:
                return await self._close("environment_error", index, str(exc))
            predicted = read_prediction(reply)
            guess = strip_marker(predicted or "")
            sample = self._record(fixed if fixed is not None else chosen, shown, real)
            await self.journal.write({"task": self.task.id, "domain": self.task.domain, "step": index + 1,
                                      "action": shown, "reply": reply, "predicted": guess, "real": real,
                                      "parsed": predicted is not None,
                                      **score_step(sample, guess, previous)})
            self.advance()
            self.scored += 1
            previous = real
        return await self._close("steps" if self.task.steps is not None else "max_steps", None, None)

    def _record(self, raw: Any, text: str, observation: str) -> BenchSample:
        """Add a real step (the action as given and as rendered) to the episode; returns it as a row.

        The first action carries the initial observation where the domain's rows do (the terminal's
        ``**Current State:**``).
        """
        if not self.history and self.actions.initial_in_action:
            text = self.actions.render(self.actions.parse(raw), self._first[0])
        self.history.append((text, observation))
        return BenchSample(task=self.task.domain, id=f"{self.task.id}-t{len(self.history)}",
                           prompt=[a for a, _ in self.history], response=[o for _, o in self.history],
                           turn_idx=len(self.history))

    async def _close(self, ended: str, at: int | None, error: str | None) -> dict[str, Any]:
        """Journal the task's closing row; steps it will never take leave the progress bar."""
        for _ in range(self.task.planned_steps - self.scored):
            self.advance()
        row = {"task": self.task.id, "domain": self.task.domain, "closed": ended,
               **({"error": error, "at_step": (at or 0) + 1} if error else {})}
        await self.journal.write(row)
        return row


def _spec(domain: str) -> Any:
    from agentworld.domains.spec import WorldSpec

    return WorldSpec(domain=domain)

"""The episode around a Simulator: turn count, turn limit, reward, and how the episode ended.

Why one object: Gymnasium, OpenEnv, TRL and the rollout loop each need the same bookkeeping, and
three kinds of "end" must stay apart. ``terminated``: the task is over (the agent said it was done,
or a terminate function said so). ``truncated``: the turn limit was reached, the task unfinished.
``output_truncated``: the world model's answer for this step was cut off at ``max_tokens`` — a flag
on the observation, not an end of the episode, which goes on.

>>> tracker = EpisodeTracker(max_turns=2)
>>> tracker.start()
>>> tracker.record(ActionError("bad")).done, tracker.record(ActionError("bad")).truncated
(False, True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentworld.sim.history import ActionError
from agentworld.sim.types import StepResult

StepReward = Callable[[StepResult], float]
"""Reward of one step from its result (a malformed action earns 0)."""
StepDone = Callable[[StepResult], bool]
"""Whether the task is over after this step."""


def step_info(result: StepResult) -> dict[str, Any]:
    """What a step tells besides the text: where it came from, injected faults, token usage."""
    return {"source": result.source, "turn": result.turn, "is_error": result.is_error,
            "fault": result.fault.model_dump() if result.fault else None, "usage": result.usage.model_dump(),
            "latency_s": result.latency_s, "repaired": result.repaired, "reasoning": result.reasoning,
            "output_truncated": result.truncated, "meta": dict(result.meta)}


class EpisodeStep(BaseModel):
    """One step of an episode as every adapter reports it."""

    model_config = ConfigDict(frozen=True)

    observation: str
    reward: float = 0.0
    terminated: bool = False
    """The task is over."""
    truncated: bool = False
    """The turn limit was reached (the task is not over, the episode is)."""
    output_truncated: bool = False
    """The world model's answer was cut off (``finish_reason == "length"``); the episode goes on."""
    turn: int = 0
    info: dict[str, Any] = Field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


class EpisodeTracker:
    """Counts turns against ``max_turns``, sums rewards and says when the episode ended, and how.

    Args:
        max_turns: turns after which the episode is truncated (``None``: no limit).
        reward_fn: reward of a step from its result (default 0.0).
        terminate_fn: whether a step's result ends the task (default: never).

    Attributes:
        turns: steps taken in this episode (malformed actions count).
        total_reward: sum of the step rewards and of :meth:`add_reward`.
    """

    def __init__(self, max_turns: int | None = None, *, reward_fn: StepReward | None = None,
                 terminate_fn: StepDone | None = None) -> None:
        if max_turns is not None and max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        self.max_turns, self.reward_fn, self.terminate_fn = max_turns, reward_fn, terminate_fn
        self.turns, self.total_reward = 0, 0.0
        self.terminated = self.truncated = False
        self._started = False

    def start(self) -> None:
        """Begin a new episode (turns, reward and end flags back to zero)."""
        self.turns, self.total_reward = 0, 0.0
        self.terminated = self.truncated = False
        self._started = True

    @property
    def started(self) -> bool:
        """:meth:`start` was called (the episode may have ended since)."""
        return self._started

    @property
    def active(self) -> bool:
        """Started and not yet ended: a step may be taken."""
        return self._started and not (self.terminated or self.truncated)

    def record(self, result: StepResult | ActionError) -> EpisodeStep:
        """Count one step (a malformed action is an ``Error: …`` observation and a turn).

        Raises:
            RuntimeError: the episode was not started or has ended (adapters check :attr:`active`
                first and raise their framework's own error).
        """
        if not self.active:
            raise RuntimeError("the episode is not active: start() it (again after it ended)")
        self.turns += 1
        if isinstance(result, ActionError):
            text, reward, ended, cut = f"Error: {result}", 0.0, False, False
            info: dict[str, Any] = {"source": "template", "is_error": True, "action_error": str(result),
                                    "turn": self.turns}
        else:
            text, info, cut = result.observation, step_info(result), result.truncated
            reward = float(self.reward_fn(result)) if self.reward_fn else 0.0
            ended = bool(self.terminate_fn(result)) if self.terminate_fn else False
        self.total_reward += reward
        self.terminated = ended
        self.truncated = not ended and self.max_turns is not None and self.turns >= self.max_turns
        return EpisodeStep(observation=text, reward=reward, terminated=self.terminated,
                           truncated=self.truncated, output_truncated=cut, turn=self.turns, info=info)

    def finish(self) -> None:
        """End the episode as terminated: the agent said it was done."""
        self.terminated, self.truncated = True, False

    def add_reward(self, reward: float) -> None:
        """Add a reward not tied to one step (a task reward computed when the episode ends)."""
        self.total_reward += reward

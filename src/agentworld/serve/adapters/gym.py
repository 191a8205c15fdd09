"""A Gymnasium view of the Simulator: text in, text out, terminated and truncated kept apart.

Turns, the turn limit and rewards are kept by :class:`~agentworld.sim.episode.EpisodeTracker`, as
in every adapter; ``info["output_truncated"]`` says the world model's answer was cut off, which
does not end the episode.

Why a Gymnasium env: RL libraries and the gymnasium checker already know ``reset(seed, options)`` →
``(obs, info)`` and ``step`` → ``(obs, reward, terminated, truncated, info)``. Observations and
actions are text (a terminal action is the keystroke-list JSON, an MCP action the call JSON), so
both spaces are :class:`TextSpace`. Needs ``gymnasium`` (``pip install agentworld[gym]``).
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

import gymnasium
from gymnasium.error import ResetNeeded
from gymnasium.spaces import Text

from agentworld.serve.adapters import as_spec
from agentworld.sim.episode import EpisodeTracker
from agentworld.sim.history import ActionError
from agentworld.sim.session import Simulator
from agentworld.sim.types import StepResult, WorldSpec

MAX_OBSERVATION_CHARS = 1 << 20
MAX_ACTION_CHARS = 1 << 16
RewardFn = Callable[[StepResult, Simulator], float]
DoneFn = Callable[[StepResult, Simulator], bool]


class TextSpace(Text):
    """Text of any Unicode characters up to ``max_length``; samples printable ASCII and whitespace.

    Why not plain :class:`~gymnasium.spaces.Text`: screens hold box drawing, accents and emoji, and a
    fixed charset would call them out of space; sampling stays within a readable charset.
    """

    def __init__(self, max_length: int, *, seed: int | None = None) -> None:
        super().__init__(max_length, min_length=0, charset=string.printable, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"TextSpace({self.max_length})"


class SimEnv(gymnasium.Env[str, str]):
    """The Simulator as a ``gymnasium.Env`` (one episode per ``reset``).

    Args:
        simulator: the simulator to drive (its router, if any, is reset with the episode seed).
        world: world of every episode unless ``reset(options={"spec": …})`` gives another.
        max_turns: steps after which the episode is truncated.
        reward_fn: ``(result, simulator) -> float`` per step (default 0.0).
        terminate_fn: ``(result, simulator) -> bool``: the task is over (default: never; text
            worlds end when the agent stops or the turn budget runs out).

    A malformed action is not an exception: it returns an ``Error: …`` observation with
    ``info["action_error"]`` and counts as a turn, as an agent loop expects. Stepping after the
    episode ended raises :class:`gymnasium.error.ResetNeeded`.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"]}  # noqa: RUF012 (gymnasium declares it so)

    def __init__(self, simulator: Simulator, world: WorldSpec | None = None, *, max_turns: int = 50,
                 reward_fn: RewardFn | None = None, terminate_fn: DoneFn | None = None,
                 render_mode: str | None = None) -> None:
        self.simulator, self.world, self.max_turns = simulator, world, max_turns
        self.reward_fn, self.terminate_fn, self.render_mode = reward_fn, terminate_fn, render_mode
        self.observation_space = TextSpace(MAX_OBSERVATION_CHARS)
        self.action_space = TextSpace(MAX_ACTION_CHARS)
        self.episode = EpisodeTracker(
            max_turns, reward_fn=(lambda result: reward_fn(result, self.simulator)) if reward_fn else None,
            terminate_fn=(lambda result: terminate_fn(result, self.simulator)) if terminate_fn else None)
        self._last = ""

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode; ``seed`` fixes faults and the sandbox, ``options["spec"]`` picks the world."""
        super().reset(seed=seed)
        episode_seed = seed if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        spec = as_spec((options or {}).get("spec"), self.world)
        router = getattr(self.simulator, "router", None)
        if router is not None and hasattr(router, "reset"):
            router.reset(episode_seed)
        self._last = self.simulator.reset(spec, seed=episode_seed)
        self.episode.start()
        return self._last, {"seed": episode_seed, "domain": spec.domain, "turn": 0}

    def step(self, action: str | dict[str, Any] | list[Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not self.episode.active:
            raise ResetNeeded("SimEnv.step() needs an active episode: call reset() first (again after "
                              "terminated or truncated)")
        try:
            result = self.episode.record(self.simulator.step(action))
        except ActionError as exc:
            result = self.episode.record(exc)
        self._last = result.observation
        return result.observation, result.reward, result.terminated, result.truncated, result.info

    def render(self) -> str | None:
        """``ansi``: the last observation text."""
        return self._last if self.render_mode == "ansi" else None

    def close(self) -> None:
        router = getattr(self.simulator, "router", None)
        if router is not None and hasattr(router, "close"):
            router.close()
        self.simulator.close()


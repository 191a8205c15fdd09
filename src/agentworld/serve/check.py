"""``check_env``: the contract checks of gymnasium's env checker, for agentworld's text environments.

Why: an environment that is not reproducible under a seed, or that accepts calls out of order,
corrupts RL runs silently. One checker covers the three shapes agentworld ships — the
:class:`~agentworld.sim.Simulator`, the Gymnasium :class:`~agentworld.serve.adapters.gym.SimEnv`
and TRL classes from :func:`~agentworld.serve.adapters.trl.make_trl_environment` — by driving each
through a small adapter and comparing whole trajectories.

The factory must build a *fresh* environment with a fresh scripted or cached model each time,
so that two builds answer the same actions the same way.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentworld.errors import AgentWorldError
from agentworld.sim.types import StepResult, WorldSpec


class EnvCheckError(AgentWorldError):
    """An environment broke its contract; the message names the check."""


@dataclass(frozen=True)
class CheckReport:
    """What was checked: the environment kind, the steps run, and notes (e.g. seed sensitivity)."""

    kind: str
    steps: int
    trajectory: list[tuple[Any, ...]]
    notes: list[str] = field(default_factory=list)


class _Driver:
    """Uniform reset/step over one environment kind; each step returns a comparable record."""

    kind = "simulator"

    def __init__(self, env: Any, spec: WorldSpec | None) -> None:
        self.env, self.spec = env, spec

    def reset(self, seed: int) -> Any:
        obs = self.env.reset(self.spec, seed=seed)
        _expect(isinstance(obs, str), f"reset() must return the observation text, got {type(obs).__name__}")
        return obs

    def step(self, action: Any) -> tuple[tuple[Any, ...], bool]:
        result = self.env.step(action)
        _expect(isinstance(result, StepResult), f"step() returned {type(result).__name__}, not StepResult")
        return (result.observation, result.source, result.is_error, result.fault), False

    def close(self) -> None:
        if hasattr(self.env, "close"):
            self.env.close()
        elif hasattr(self.env, "__exit__"):
            self.env.__exit__(None, None, None)


class _GymDriver(_Driver):
    kind = "gymnasium"

    def reset(self, seed: int) -> Any:
        out = self.env.reset(seed=seed, options={"spec": self.spec} if self.spec else None)
        _expect(isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict),
                "reset() must return (observation, info dict)")
        _expect(self.env.observation_space.contains(out[0]), "reset() observation outside observation_space")
        return out[0]

    def step(self, action: Any) -> tuple[tuple[Any, ...], bool]:
        out = self.env.step(action)
        _expect(isinstance(out, tuple) and len(out) == 5, "step() must return (obs, reward, terminated, "
                                                          "truncated, info)")
        obs, reward, terminated, truncated, info = out
        _expect(self.env.observation_space.contains(obs), "step() observation is outside observation_space")
        _expect(isinstance(reward, int | float) and not isinstance(reward, bool), "reward must be a float")
        _expect(isinstance(terminated, bool) and isinstance(truncated, bool), "terminated, truncated: bool")
        _expect(isinstance(info, dict) and "source" in info, "info must be a dict carrying 'source'")
        return (obs, float(reward), terminated, truncated, info.get("source"), info.get("fault")), \
            terminated or truncated


class _TrlDriver(_Driver):
    """Actions are ``(tool name, arguments)`` pairs called as methods."""

    kind = "trl"

    def reset(self, seed: int) -> Any:
        obs = self.env.reset(seed=seed, **({"spec": self.spec} if self.spec else {}))
        _expect(obs is None or isinstance(obs, str), "reset() must return text or None (TRL appends it)")
        return obs

    def step(self, action: Any) -> tuple[tuple[Any, ...], bool]:
        name, arguments = action
        out = getattr(self.env, name)(**arguments)
        _expect(isinstance(out, str), f"tool method {name}() must return text, got {type(out).__name__}")
        return (out,), False


def _expect(ok: bool, message: str) -> None:
    if not ok:
        raise EnvCheckError(message)


def _driver(env: Any, spec: WorldSpec | None) -> _Driver:
    if hasattr(env, "observation_space") and hasattr(env, "action_space"):
        return _GymDriver(env, spec)
    if inspect.signature(env.reset).parameters.get("kwargs") and not hasattr(env, "step"):
        return _TrlDriver(env, spec)
    return _Driver(env, spec)


def _run(factory: Callable[[], Any], actions: Sequence[Any], seed: int,
         spec: WorldSpec | None) -> tuple[str, list[tuple[Any, ...]]]:
    driver = _driver(factory(), spec)
    try:
        records: list[tuple[Any, ...]] = [("reset", driver.reset(seed))]
        for i, action in enumerate(actions):
            record, done = driver.step(action)
            records.append(record)
            if done:
                try:
                    driver.step(actions[i + 1] if i + 1 < len(actions) else action)
                except Exception:
                    break
                raise EnvCheckError(f"step() after the episode ended (step {i + 1}) must raise until reset()")
        return driver.kind, records
    finally:
        driver.close()


_MODEL_SOURCES = {"world_model": "model", "cache": "model", "fault": "model"}


def _answer(record: tuple[Any, ...]) -> tuple[Any, ...]:
    """A simulator step's record with model, cache and fault sources alike: a fork's cached answer
    may serve the parent's identical request, which changes where the text came from, not the text."""
    if len(record) != 4:
        return record
    observation, source, is_error, fault = record
    return observation, _MODEL_SOURCES.get(source, source), is_error, fault


def _check_forks(factory: Callable[[], Any], actions: Sequence[Any], seed: int, spec: WorldSpec | None,
                 baseline: list[tuple[Any, ...]]) -> str:
    """Before each step, fork and step the fork through the remaining actions; the parent's results
    must stay those of ``baseline`` (the run without forks), and no fork step may be real."""
    env = factory()
    driver = _driver(env, spec)
    if driver.kind != "simulator" or not callable(getattr(env, "fork", None)):
        driver.close()
        return "fork: not checked (the environment has no fork())"
    forked = 0
    try:
        records: list[tuple[Any, ...]] = [("reset", driver.reset(seed))]
        for k, action in enumerate(actions):
            branch = _Driver(env.fork(), spec)
            try:
                for later in actions[k:]:
                    try:
                        record, _ = branch.step(later)
                    except EnvCheckError:
                        raise
                    except Exception:
                        break
                    forked += 1
                    _expect(record[1] != "real", f"fork: a fork taken before step {k + 1} executed an action "
                                                 "on the real environment")
            finally:
                branch.close()
            records.append(driver.step(action)[0])
    finally:
        driver.close()
    for i, (a, b) in enumerate(zip(baseline, records, strict=True)):
        _expect(_answer(a) == _answer(b), f"fork: stepping forks changed the parent's step {i} under seed "
                                          f"{seed}\nwithout forks: {a!r}\nwith forks:    {b!r}")
    return f"fork: {forked} steps of forks left the parent's {len(records) - 1} results unchanged"


def check_env(env_factory: Callable[[], Any], actions: Sequence[Any], *, seed: int = 0,
              other_seed: int | None = None, spec: WorldSpec | None = None) -> CheckReport:
    """Check an environment's contract: call order, result types, determinism under a seed, forks.

    The fork check (environments with ``fork()``, such as the Simulator) forks before every step,
    steps the fork through the remaining actions, and requires the parent's results to stay those of
    a run without forks; the model must answer by the request, not by call order.

    Args:
        env_factory: builds a fresh environment (with a fresh scripted model) on every call.
        actions: scripted actions (TRL classes: ``(tool_name, arguments)`` pairs).
        seed: seed of the compared runs.
        other_seed: also run with this seed and note whether the trajectory changed (allowed).
        spec: world to reset into (Simulator: ``reset(spec)``; Gym: ``options["spec"]``; TRL: ``spec=``).

    Raises:
        EnvCheckError: naming the first broken rule.
    """
    env = _driver(env_factory(), spec)
    try:
        try:
            env.step(actions[0] if actions else "")
        except EnvCheckError:
            raise
        except Exception:
            pass
        else:
            raise EnvCheckError("step() before reset() must raise")
        first = env.reset(seed)
        _expect(env.reset(seed) == first, "two resets with the same seed gave different initial observations")
    finally:
        env.close()
    kind, one = _run(env_factory, actions, seed, spec)
    _, two = _run(env_factory, actions, seed, spec)
    for i, (a, b) in enumerate(zip(one, two, strict=True)):
        _expect(a == b, f"not deterministic under seed {seed}: step {i} differs between runs\n{a!r}\n{b!r}")
    notes = [f"{kind}: {len(one) - 1} steps reproducible under seed {seed}"]
    if other_seed is not None:
        _, other = _run(env_factory, actions, other_seed, spec)
        notes.append(f"seed {other_seed} {'changed' if other != one else 'did not change'} the trajectory")
    notes.append(_check_forks(env_factory, actions, seed, spec, one))
    return CheckReport(kind=kind, steps=len(one) - 1, trajectory=one, notes=notes)

"""Sim-to-real routing: which steps run in a domain's real environment and which the world model predicts.

Why: a real environment is exact and free where it can act (a safe local command in the terminal's
sandbox), but has no network, hardware or outside services, so some steps must be imagined. The
Simulator asks :meth:`Router.route` once per step, awaits :meth:`Router.execute` for ``"real"`` and
records the real observation in its history, so the model sees every turn. The reverse does not
hold: after the model imagined a step that may change the world (a clone, an install, a write) the
real environment no longer matches, so later steps stay with the model (:attr:`Router.diverged`).

Contract for a domain (``agentworld.domains.<name>``; the terminal's is the worked example):

- ``PLUGIN.environment`` names a factory ``open_environment(seed: int = 0, **options) ->
  RealEnvironment``: ``initial_observation()``, ``step(action) -> observation`` and ``close()``
  (idempotent; cleans everything up). ``action`` is the action's text as the episode's history and
  an AgentWorldBench row hold it (the terminal's first one also carries ``**Current State:**``);
  the observation is the row's, without the ``[Environment Response]`` marker. The router opens it
  lazily, on the first real step, with the episode's seed, and closes it on :meth:`Router.reset`.
  It may expose ``awaiting_input: bool`` — True while a program it runs waits for input (a REPL):
  then the next step goes to it whatever the rules say.
- ``PLUGIN.routing`` names ``decide(action: str) -> RouteDecision``: ``real`` for actions safe to
  run for real, ``model`` with ``side_effects=True`` for imagined actions that may change the
  world, ``side_effects=False`` for ones that only read, ``follow=True`` for an action that belongs
  to the previous step (it goes where that one went). ``decide`` may take a keyword ``prefer``
  (``"fidelity"`` or ``"cost"``); the router passes it only when the caller asked for ``"cost"``.
  Without ``routing`` every step runs for real under ``auto``.
- A domain without an environment is simulated only: ``auto`` and ``model`` route to the model,
  ``real`` is an error naming the domain.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any, Literal

from agentworld.domains.base import RealEnvironment, RouteDecision, plugin_of, resolve
from agentworld.errors import AgentWorldError

Route = Literal["real", "model"]
Policy = Literal["rules", "real", "model"]
Prefer = Literal["fidelity", "cost"]
POLICIES: tuple[str, ...] = ("rules", "real", "model")
EnvironmentFactory = Callable[..., RealEnvironment]
"""``(seed, **options) -> RealEnvironment``."""


def environment_of(domain: str) -> tuple[EnvironmentFactory | None, Callable[..., RouteDecision] | None]:
    """The real-environment factory and the routing rule of ``domain`` (None where it has none)."""
    found = plugin_of(domain)
    if found.environment is None:
        return None, None
    factory: EnvironmentFactory = resolve(found.environment)
    return factory, resolve(found.routing) if found.routing else None


def require_environment(domain: str) -> None:
    """Raise a clear error when ``domain`` has no real environment (``--route real``)."""
    if environment_of(domain)[0] is None:
        found = plugin_of(domain)
        note = f" ({found.real_note})" if found.real_note else ""
        raise AgentWorldError(f"domain {domain!r} has no real environment{note}; "
                              "use --route auto or --route model")


class Router:
    """Decides real vs model per step and runs the real ones in the domain's lazily opened environment.

    Args:
        policy: ``rules`` (the domain's routing rule; CLI ``--route auto``), ``real`` (every step
            real) or ``model`` (never real).
        prefer: ``fidelity`` runs everything the rules allow for real; ``cost`` asks the rules for
            cheap steps only (the terminal: well-known quick commands).
        max_real_steps: after this many real steps the episode continues with the model.
        seed: the environment's seed; :meth:`reset` may change it per episode.
        domain: check up front that this domain can run ``policy`` (``real`` needs an environment).
        environment_factory: builds the real environment from a seed (default: the domain's own).
        environment_options: keyword options for the domain's factory.
    """

    def __init__(self, policy: Policy = "rules", *, prefer: Prefer = "fidelity",
                 max_real_steps: int | None = None, seed: int = 0, domain: str | None = None,
                 environment_factory: EnvironmentFactory | None = None,
                 environment_options: Mapping[str, Any] | None = None) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown route policy {policy!r}; use one of {', '.join(POLICIES)}")
        if prefer not in ("fidelity", "cost"):
            raise ValueError(f"prefer must be 'fidelity' or 'cost', not {prefer!r}")
        if domain is not None and policy == "real" and environment_factory is None:
            require_environment(domain)
        self.policy, self.prefer, self.seed, self.max_real_steps = policy, prefer, seed, max_real_steps
        self._factory = environment_factory
        self._options = dict(environment_options or {})
        self._env: RealEnvironment | None = None
        self._domain: str | None = None
        self._found: dict[str, tuple[EnvironmentFactory | None, Callable[..., RouteDecision] | None]] = {}
        self._lock = threading.Lock()
        self.real_steps = 0
        self.diverged = False
        """A model step may have changed the world, so the real environment no longer matches."""
        self._last: Route = "model"

    def route(self, domain: str, action: Any) -> Route:
        """``"real"`` or ``"model"`` for this step (call once per step: it records the decision)."""
        return self.decide(domain, action).route

    def decide(self, domain: str, action: Any) -> RouteDecision:
        """Like :meth:`route`, with the reason; updates the episode's routing state."""
        decision = self._decide(domain, action)
        if decision.follow:
            decision = RouteDecision(self._last, decision.reason, side_effects=False)
        if decision.route == "model" and decision.side_effects:
            self.diverged = True
        self._last = decision.route
        return decision

    def _hooks(self, domain: str) -> tuple[EnvironmentFactory | None, Callable[..., RouteDecision] | None]:
        if domain not in self._found:
            self._found[domain] = environment_of(domain)
        return self._found[domain]

    def _decide(self, domain: str, action: Any) -> RouteDecision:
        factory, rule = self._hooks(domain)
        if self._factory is None and factory is None:
            if self.policy == "real":
                require_environment(domain)
            return RouteDecision("model", f"no real environment for domain {domain!r}", side_effects=False)
        if self._domain not in (None, domain):
            self.close()
        self._domain = domain
        if self.policy == "model":
            return RouteDecision("model", "route policy 'model'", side_effects=False)
        if self.max_real_steps is not None and self.real_steps >= self.max_real_steps:
            return RouteDecision("model", f"real-step budget of {self.max_real_steps} used")
        if self.policy == "real":
            return RouteDecision("real", "route policy 'real'")
        if self.diverged:
            return RouteDecision("model", "an earlier model step changed the world")
        if self._env is not None and getattr(self._env, "awaiting_input", False):
            return RouteDecision("real", "input to a program still running in the real environment")
        if rule is None:
            return RouteDecision("real", f"the {domain} environment runs every step")
        return rule(action, prefer=self.prefer) if self.prefer != "fidelity" else rule(action)

    async def execute(self, action: Any) -> str:
        """Run one action in the real environment and return its observation (in a worker thread)."""
        text = action if isinstance(action, str) else json.dumps(action, ensure_ascii=False)
        return await asyncio.to_thread(self._execute, text)

    def _execute(self, action: str) -> str:
        with self._lock:
            observation = self._environment().step(action)
            self.real_steps += 1
            self._last = "real"
            return observation

    def initial_observation(self) -> str:
        """The real environment's first observation (opens it), so a model episode can start from it."""
        with self._lock:
            return self._environment().initial_observation()

    def _environment(self) -> RealEnvironment:
        if self._env is None:
            factory = self._factory
            if factory is None:
                if self._domain is None:
                    raise AgentWorldError("Router: no domain routed yet, so no real environment to open")
                found, _ = self._hooks(self._domain)
                if found is None:
                    require_environment(self._domain)
                factory = found
            assert factory is not None
            self._env = factory(self.seed, **self._options) if self._options else factory(self.seed)
        return self._env

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode: drop the real environment (a fresh one opens on the next real step)."""
        self.close()
        self.seed = self.seed if seed is None else seed
        self.real_steps, self.diverged, self._last = 0, False, "model"

    def close(self) -> None:
        """Close the real environment, if one was opened (idempotent)."""
        with self._lock:
            env, self._env = self._env, None
        if env is not None:
            env.close()

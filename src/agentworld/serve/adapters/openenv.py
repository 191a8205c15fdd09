"""The Simulator as an OpenEnv environment (``openenv`` 0.10: ``openenv.core.env_server``).

Why optional and lazy: OpenEnv is the interchange format for RL environment servers (WebSocket
sessions, ``/reset``, ``/step``, ``/state``), but ``openenv`` 0.10 pins ``mcp<2`` (through fastmcp)
and pulls gradio, while agentworld needs mcp 2.x. So it lives in its own virtual environment
(``pip install openenv`` there, then ``pip install --no-deps agentworld`` and agentworld's other
dependencies except ``mcp``) and this module imports it only when a class or app
is built. :class:`EpisodeCore` holds everything that does not need OpenEnv (and is tested alone).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from agentworld.domains import DEFAULT_DOMAIN
from agentworld.errors import AgentWorldError
from agentworld.serve.adapters import as_spec
from agentworld.sim.episode import EpisodeTracker
from agentworld.sim.history import ActionError
from agentworld.sim.session import Simulator
from agentworld.sim.types import StepResult, WorldSpec

INSTALL_HINT = ("OpenEnv is not installed. It pins mcp<2 while agentworld needs mcp 2.x, so install it in a "
                "separate virtual environment: python -m venv .venv-openenv && .venv-openenv/bin/pip install "
                "openenv openai pydantic typer rich httpx orjson jsonschema pyyaml fastapi uvicorn && "
                ".venv-openenv/bin/pip install --no-deps -e .")
RewardFn = Callable[[StepResult, Simulator], float]


def openenv_server() -> Any:
    """``openenv.core.env_server``, or an :class:`AgentWorldError` saying how to install it."""
    try:
        return importlib.import_module("openenv.core.env_server")
    except ImportError as exc:
        raise AgentWorldError(f"{INSTALL_HINT} ({exc})") from exc


class EpisodeCore:
    """Reset/step bookkeeping shared by the OpenEnv classes: plain dicts in, plain dicts out.

    OpenEnv observations have one ``done``; it is ``terminated or truncated`` of the episode's
    :class:`~agentworld.sim.episode.EpisodeTracker`, and the metadata says which (and whether the
    world model's answer was cut off, ``output_truncated``, which does not end the episode).
    """

    def __init__(self, simulator: Simulator, world: WorldSpec | None = None, *, max_turns: int = 50,
                 reward_fn: RewardFn | None = None) -> None:
        self.simulator, self.world, self.max_turns, self.reward_fn = simulator, world, max_turns, reward_fn
        self.episode = EpisodeTracker(
            max_turns, reward_fn=(lambda result: reward_fn(result, self.simulator)) if reward_fn else None)
        self.seed = 0
        self.episode_id: str | None = None
        self.spec: WorldSpec | None = None

    @property
    def steps(self) -> int:
        return self.episode.turns

    def start(self, seed: int | None, episode_id: str | None,
              kwargs: dict[str, Any]) -> tuple[WorldSpec, int]:
        """The spec and seed of a new episode (``spec`` from the reset request, else the default)."""
        spec = as_spec(kwargs.get("spec"), self.world)
        self.seed, self.episode_id, self.spec = seed or 0, episode_id, spec
        self.episode.start()
        router = getattr(self.simulator, "router", None)
        if router is not None and hasattr(router, "reset"):
            router.reset(self.seed)
        return spec, self.seed

    def opened(self, text: str, spec: WorldSpec) -> dict[str, Any]:
        return {"text": text, "source": "template", "turn": 0, "done": False, "reward": None,
                "metadata": {"seed": self.seed, "domain": spec.domain, "episode_id": self.episode_id}}

    def check_step(self) -> None:
        if not self.episode.active:
            raise AgentWorldError("step() needs an active episode: call reset() first (again after done); "
                                  "over OpenEnv's server use a /ws session (plain HTTP /step is stateless)")

    def stepped(self, result: StepResult | ActionError) -> dict[str, Any]:
        """The observation fields for a step result (a malformed action becomes an error observation)."""
        step = self.episode.record(result)
        info = {**step.info, "terminated": step.terminated, "truncated": step.truncated,
                "output_truncated": step.output_truncated}
        return {"text": step.observation, "source": info.pop("source"), "turn": step.turn, "done": step.done,
                "reward": step.reward, "metadata": info}


def make_openenv_environment(simulator_factory: Callable[[], Simulator], world: WorldSpec | None = None, *,
                             max_turns: int = 50, reward_fn: RewardFn | None = None) -> dict[str, type]:
    """OpenEnv classes for the Simulator: ``environment``, ``action``, ``observation``, ``state``.

    ``SimAction.action`` is the Simulator action (keystroke list, MCP call, text or their JSON);
    ``SimObservation`` carries the text and its ``source``; reset accepts ``spec`` (WorldSpec, dict
    or JSON). ``done`` becomes true after ``max_turns`` steps.

    Raises:
        AgentWorldError: openenv is not installed (the message says how).
    """
    server = openenv_server()
    from pydantic import Field

    class SimAction(server.Action):  # type: ignore[name-defined]
        action: Any = Field(..., description="Keystroke list (terminal), tool call (mcp), text, or JSON")

    class SimObservation(server.Observation):  # type: ignore[name-defined]
        text: str = ""
        source: str = "template"
        turn: int = 0

    class SimState(server.State):  # type: ignore[name-defined]
        seed: int = 0
        domain: str = DEFAULT_DOMAIN
        ledger: str = ""

    class SimulatorEnvironment(server.Environment):  # type: ignore[name-defined]
        """An agentworld Simulator episode per reset; each instance owns its simulator."""

        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self.core = EpisodeCore(simulator_factory(), world, max_turns=max_turns, reward_fn=reward_fn)

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Any:
            spec, episode_seed = self.core.start(seed, episode_id, kwargs)
            text = self.core.simulator.reset(spec, seed=episode_seed)
            return SimObservation(**self.core.opened(text, spec))

        async def reset_async(self, seed: int | None = None, episode_id: str | None = None,
                              **kwargs: Any) -> Any:
            spec, episode_seed = self.core.start(seed, episode_id, kwargs)
            text = await self.core.simulator.areset(spec, seed=episode_seed)
            return SimObservation(**self.core.opened(text, spec))

        def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
            self.core.check_step()
            try:
                result: StepResult | ActionError = self.core.simulator.step(action.action)
            except ActionError as exc:
                result = exc
            return SimObservation(**self.core.stepped(result))

        async def step_async(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
            self.core.check_step()
            try:
                result: StepResult | ActionError = await self.core.simulator.astep(action.action)
            except ActionError as exc:
                result = exc
            return SimObservation(**self.core.stepped(result))

        @property
        def state(self) -> Any:
            core = self.core
            ledger = core.simulator.state().ledger if core.spec is not None else ""
            domain = (core.spec or core.world or WorldSpec()).domain
            return SimState(episode_id=core.episode_id, step_count=core.steps, seed=core.seed, domain=domain,
                            ledger=ledger)

        def close(self) -> None:
            self.core.simulator.close()

    return {"environment": SimulatorEnvironment, "action": SimAction, "observation": SimObservation,
            "state": SimState}


def create_openenv_app(simulator_factory: Callable[[], Simulator], world: WorldSpec | None = None, *,
                       max_turns: int = 50, reward_fn: RewardFn | None = None,
                       max_concurrent_envs: int | None = None) -> Any:
    """An OpenEnv FastAPI app (HTTP + WebSocket ``/ws`` sessions) serving the Simulator.

    Run it with ``uvicorn`` in the OpenEnv virtual environment; see :data:`INSTALL_HINT`.
    """
    classes = make_openenv_environment(simulator_factory, world, max_turns=max_turns, reward_fn=reward_fn)
    return openenv_server().create_app(classes["environment"], classes["action"], classes["observation"],
                                       env_name="agentworld", max_concurrent_envs=max_concurrent_envs,
                                       state_cls=classes["state"])

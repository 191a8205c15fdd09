"""A verifiers environment over simulated worlds: ``load_environment(**kwargs) -> vf.Environment``.

Why: prime-rl, SkyRL, NeMo-Gym and rLLM take environments in the verifiers format (a package whose
``load_environment`` returns a ``vf.Environment``; ``vf.load_environment("agentworld-sim")`` imports the
module ``agentworld_sim`` of ``environments/agentworld_sim``, which re-exports the function here).

Each rollout gets its own :class:`~agentworld.sim.session.Simulator` episode. A dataset row's ``info``
names the world folder (``agentworld synth`` output), the task, the control spec (a stem of the world's
``controls/*.yaml``, or ``clean``) and the seed, so a GRPO group of one row replays the same world,
perturbations and fault draws. The world's MCP tools are the agent's tools (native tool calls through
the OpenAI client verifiers drives); each call is one simulator step. The reward is the task's rule
check (:func:`agentworld.synth.world.evaluate` over the final entity state and the calls that went
through, as ``train rollout --sweep-controls`` scores it): 1.0 when the success conditions hold.

Written against verifiers 0.3.1, the last release with this API (0.4.0 replaced it with ``verifiers.v1``
tasksets); ``import verifiers`` happens only inside :func:`load_environment`.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld.domains.spec import WorldSpec
from agentworld.errors import AgentWorldError, BackendError, DataError
from agentworld.models.base import ChatBackend
from agentworld.sim.history import ActionError
from agentworld.sim.session import Simulator
from agentworld.sim.types import SessionState, StepResult
from agentworld.synth.world import World
from agentworld.train.sweep import CLEAN, load_world_tasks, with_controls, world_tasks

__all__ = ["SYSTEM_PROMPT", "WorldTasks", "dataset_rows", "load_environment", "tool_defs"]

ENV_ID = "agentworld-sim"
SYSTEM_PROMPT = ("You are an agent using the tools of a service to complete the user's task. Call the tools "
                 "you need; when the task is done, reply with a short summary and no tool call.")


def tool_defs(spec: WorldSpec) -> list[dict[str, Any]]:
    """The world's MCP tools as verifiers tool definitions (``name``, ``description``, ``parameters``)."""
    return [{"name": str(t["name"]), "description": str(t.get("description") or ""),
             "parameters": dict(t.get("inputSchema") or {"type": "object"})} for t in spec.tools]


@dataclass(frozen=True)
class _Loaded:
    world: World
    spec: WorldSpec
    checks: dict[str, Callable[[SessionState], tuple[bool, list[str]]]]


class WorldTasks:
    """World folders loaded once per environment (rows only name them), with each task's rule check."""

    def __init__(self) -> None:
        self._worlds: dict[str, _Loaded] = {}

    def get(self, folder: str) -> _Loaded:
        if folder not in self._worlds:
            world, spec, _ = load_world_tasks(folder)
            checks = {t.id: t.check for t in world_tasks(world) if t.check is not None}
            self._worlds[folder] = _Loaded(world, spec, checks)
        return self._worlds[folder]

    def episode(self, info: dict[str, Any]) -> tuple[WorldSpec, int]:
        """The row's world spec (with its control spec's faults and facts) and seed.

        Raises:
            DataError: the row names a control spec or task the world does not have.
        """
        folder = str(info["world"])
        loaded = self.get(folder)
        controls = str(info.get("controls") or CLEAN)
        spec = loaded.spec
        if controls != CLEAN:
            if controls not in loaded.world.controls:
                raise DataError(f"unknown control spec {controls!r} (the world has: "
                                f"{', '.join(sorted(loaded.world.controls)) or 'none'})", path=folder,
                                field="info.controls")
            spec = with_controls(spec, loaded.world.controls[controls])
        if str(info.get("task_id", "")) not in loaded.checks:
            raise DataError(f"unknown task {info.get('task_id')!r}", path=folder, field="info.task_id")
        return spec, int(info.get("seed") or 0)

    def check(self, info: dict[str, Any], session: SessionState) -> tuple[bool, list[str]]:
        return self.get(str(info["world"])).checks[str(info["task_id"])](session)


def dataset_rows(worlds: Sequence[str | Path], *, controls: Sequence[str] = (CLEAN,), seed: int = 0,
                 system_prompt: str = SYSTEM_PROMPT) -> list[dict[str, Any]]:
    """One verifiers row per (world, task, control spec): the prompt and the ``info`` a rollout starts from.

    The user message is the task's instruction and the world's initial entities (what the agent may
    look up first). Row ``i`` gets seed ``seed + i``; every rollout of a row uses the row's seed.

    Raises:
        DataError: a world folder does not load, or lacks one of ``controls``.
    """
    rows: list[dict[str, Any]] = []
    for folder in worlds:
        world, spec, tasks = load_world_tasks(folder)
        for name in controls:
            if name != CLEAN and name not in world.controls:
                raise DataError(f"unknown control spec {name!r} (the world has: "
                                f"{', '.join(sorted(world.controls)) or 'none'})", path=str(folder))
            for task in tasks:
                user = task.instruction + (f"\n\n{spec.initial_state}" if spec.initial_state else "")
                rows.append({"prompt": [{"role": "system", "content": system_prompt},
                                        {"role": "user", "content": user}],
                             "answer": "",
                             "info": {"world": str(folder), "task_id": task.id, "controls": name,
                                      "seed": seed + len(rows)}})
    return rows


async def _step(sim: Simulator, name: str, arguments: str) -> StepResult | str:
    """One tool call as a simulator step; an unparsable call is answered with an error text."""
    try:
        args = json.loads(arguments or "{}")
    except ValueError as exc:
        return f"Error: the arguments of {name} are not JSON: {exc}"
    if not isinstance(args, dict):
        return f"Error: the arguments of {name} must be a JSON object"
    try:
        return await sim.astep({"tool_name": name, "arguments": args})
    except ActionError as exc:
        return f"Error: {exc}"


def _per_loop(make: Callable[[], ChatBackend]) -> Callable[[], ChatBackend]:
    """One backend per event loop: an HTTP client's connections belong to the loop that opened them,
    and callers of verifiers (``generate_sync``, ``vf-eval``, a trainer per step) may run each batch
    in a new loop. Outside any loop (at load time) the backend is built and kept for no loop."""
    backends: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ChatBackend] = weakref.WeakKeyDictionary()

    def get() -> ChatBackend:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return make()
        if loop not in backends:
            backends[loop] = make()
        return backends[loop]

    return get


def _environment_class() -> type[Any]:
    import verifiers as vf
    from verifiers.types import Tool, ToolMessage

    class SimulatedWorldEnv(vf.MultiTurnEnv):
        """Multi-turn tool use against one Simulator episode per rollout (see the module docstring)."""

        def __init__(self, *, world_model: Callable[[], ChatBackend], worlds: WorldTasks,
                     **kwargs: Any) -> None:
            self.world_model, self.worlds = world_model, worlds
            super().__init__(**kwargs)

        async def setup_state(self, state: Any) -> Any:
            spec, seed = self.worlds.episode(state["info"])
            sim = Simulator(self.world_model())
            await sim.areset(spec, seed=seed)
            state["sim"], state["sim_sources"] = sim, []
            state["tool_defs"] = [Tool(**t) for t in tool_defs(spec)]
            return state

        async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
            replies = []
            for call in messages[-1].tool_calls or []:
                try:
                    result = await _step(state["sim"], call.name, call.arguments)
                except BackendError as exc:  # ends this rollout with an error, not the whole group
                    raise vf.InfraError(f"the world model failed: {exc}") from exc
                text = result if isinstance(result, str) else result.observation
                state["sim_sources"].append("agent_error" if isinstance(result, str) else result.source)
                replies.append(ToolMessage(role="tool", content=text, tool_call_id=call.id))
            return replies

        @vf.stop
        async def no_tools_called(self, state: Any) -> bool:
            if not state["trajectory"]:
                return False
            last = state["trajectory"][-1]["completion"][-1]
            return bool(last.role == "assistant" and not getattr(last, "tool_calls", None))

        @vf.cleanup
        async def close_session(self, state: Any) -> None:
            """Keep the episode's final state for scoring (cleanup runs before the rubric), then close."""
            sim = state.pop("sim", None)
            if sim is not None:
                state["session"] = sim.state()
                await sim.aclose()

    return SimulatedWorldEnv


def _rubric(worlds: WorldTasks) -> Any:
    import verifiers as vf

    async def task_success(state: Any, info: dict[str, Any]) -> float:
        """1.0 when the task's success rules hold on the episode (0.0 without an episode)."""
        session = state.get("session")
        if session is None:
            return 0.0
        passed, reasons = worlds.check(info, session)
        state["check_reasons"] = reasons
        return float(passed)

    async def sim_turns(state: Any) -> float:
        session = state.get("session")
        return float(session.turn) if session is not None else 0.0

    async def faults(state: Any) -> float:
        session = state.get("session")
        return float(len(session.faults)) if session is not None else 0.0

    rubric = vf.Rubric(funcs=[task_success], weights=[1.0])
    rubric.add_metric(sim_turns)
    rubric.add_metric(faults)
    return rubric


def load_environment(world: str | Sequence[str] = "", *, mode: str = "agent",
                     controls: str | Sequence[str] = CLEAN, seed: int = 0,
                     model: str = "mock", model_base_url: str | None = None, model_api_key: str | None = None,
                     world_model: ChatBackend | None = None, max_turns: int = 10,
                     system_prompt: str = SYSTEM_PROMPT, **env_kwargs: Any) -> Any:
    """The verifiers environment of one or more synthesized worlds (``vf.load_environment`` calls this).

    Args:
        world: world folder(s) (``agentworld synth`` output); one row per task and control spec.
        mode: ``agent`` (this module), or ``world-model``: the policy is the world model, scored by the
            rule or hybrid reward on AgentWorldBench turns (:mod:`agentworld.train.verifiers_wm`; its
            arguments ``data``, ``reward``, ``judge*`` come through ``env_kwargs``).
        controls: control spec stem(s) of the worlds' ``controls/`` (``clean``: none).
        seed: seed of the first row (row ``i``: ``seed + i``).
        model, model_base_url, model_api_key: the world-model endpoint (OpenAI-compatible); without a
            URL, ``model`` names a built-in backend (``agentworld.endpoints.build_backend``).
        world_model: a backend object instead (e.g. a ScriptedBackend in tests).
        max_turns: agent turns per rollout.
        env_kwargs: passed to ``vf.MultiTurnEnv`` (e.g. ``timeout_seconds``).

    Raises:
        AgentWorldError: no world given, or a world folder does not load.
    """
    if mode == "world-model":
        from agentworld.train.verifiers_wm import load_world_model_environment

        return load_world_model_environment(**env_kwargs)
    if mode != "agent":
        raise AgentWorldError(f"{ENV_ID}: unknown mode {mode!r} (known: agent, world-model)")
    folders = [world] if isinstance(world, str) else list(world)
    if not any(folders):
        raise AgentWorldError(f"{ENV_ID}: pass world=<folder> (a world folder from `agentworld synth`)")
    from datasets import Dataset

    backend: Callable[[], ChatBackend]
    if world_model is None:
        from agentworld.endpoints import build_backend

        backend = _per_loop(lambda: build_backend(model, model_base_url, model_api_key))
        backend()  # an unknown backend name fails here, not in the first rollout
    else:
        backend = lambda: world_model  # noqa: E731 (the caller's object, as given)
    names = [controls] if isinstance(controls, str) else list(controls)
    worlds = WorldTasks()
    rows = dataset_rows(folders, controls=names, seed=seed, system_prompt=system_prompt)
    env_class = _environment_class()
    return env_class(world_model=backend, worlds=worlds, dataset=Dataset.from_list(rows),
                     rubric=_rubric(worlds), max_turns=max_turns, env_id=ENV_ID, **env_kwargs)

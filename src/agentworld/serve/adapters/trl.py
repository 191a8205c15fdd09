"""TRL ``environment_factory`` classes generated from MCP tool lists, backed by the Simulator.

Why generated methods: TRL turns every public method of the environment (except ``reset``) into
a tool, reading its name, type hints and Google docstring with ``transformers.utils.get_json_schema``.
So each MCP tool becomes a method with a real signature built from its ``inputSchema`` (keyword-only
parameters typed ``str``/``int``/``float``/``bool``/``list``/``dict``; optional ones default to
:data:`UNSET` and are left out of the call) and a docstring whose ``Args:`` lines are the schema's
descriptions.

Errors: a tool result that is an error (invalid arguments, injected faults) is *returned* as its text,
like an MCP server's ``isError`` result, so the policy sees it and can recover; TRL would turn a
raised exception into ``{"error": …}`` and count a tool failure. Calling a method with arguments its
signature rejects raises ``TypeError`` as for any Python function.

>>> from agentworld.models.scripted import ScriptedBackend
>>> tools = [{"name": "get_time", "description": "Current time.", "inputSchema": {"type": "object"}}]
>>> Env = make_trl_environment(tools, model=lambda: ScriptedBackend(default="12:00"))
>>> env = Env(); env.reset(); env.get_time()
'12:00'
"""

from __future__ import annotations

import inspect
import json
import keyword
import re
from collections.abc import Callable, Mapping
from typing import Any, Optional, Union

from agentworld.domains import TOOLS_DOMAIN
from agentworld.models.base import ChatBackend
from agentworld.sim.curriculum import Curriculum
from agentworld.sim.episode import EpisodeTracker
from agentworld.sim.session import Simulator
from agentworld.sim.types import SessionState, StepResult, WorldSpec

RewardFn = Callable[[SessionState], float]
ModelArg = Union[ChatBackend, Callable[[], ChatBackend], None]  # noqa: UP007 (a runtime alias)
_SCALARS: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "object": dict}
_TOOL_NAME_RE = re.compile(r"^[A-Za-z][\w.-]*$")
RESERVED = frozenset({"reset", "get_reward"})


class _Unset:
    """Marks an optional tool argument the caller did not pass (left out of the call)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


def python_type(schema: Mapping[str, Any]) -> Any:
    """The Python annotation for a JSON-schema property (``Any`` when it has no single clear type)."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        inner = python_type({**schema, "type": kinds[0]}) if len(kinds) == 1 else Any
        return Optional[inner] if "null" in kind and inner is not Any else inner  # noqa: UP045
    if kind == "array":
        items = schema.get("items")
        item: Any = python_type(items) if isinstance(items, Mapping) and "type" in items else None
        return list if item is None else list[item]
    return _SCALARS.get(kind, Any) if isinstance(kind, str) else Any


def _one_line(text: Any) -> str:
    return " ".join(str(text or "").split())


def tool_docstring(tool: Mapping[str, Any]) -> str:
    """A Google docstring for a tool that ``get_json_schema`` reads back into the tool's schema."""
    props: Mapping[str, Any] = (tool.get("inputSchema") or {}).get("properties") or {}
    lines = [str(tool.get("description") or f"Call the {tool['name']} tool.").strip()]
    if props:
        lines += ["", "Args:"]
        for name, prop in props.items():
            desc = _one_line(prop.get("description")) or f"The {name} argument."
            if isinstance(prop.get("enum"), list) and all(isinstance(v, str) for v in prop["enum"]):
                desc += f" (choices: {json.dumps(prop['enum'])})"
            lines.append(f"    {name}: {desc}")
    lines += ["", "Returns:", "    The tool result text (an error result is returned as text, not raised)."]
    return "\n".join(lines)


def tool_signature(tool: Mapping[str, Any]) -> inspect.Signature:
    """``(self, *, a: str, b: int = UNSET) -> str`` from the tool's ``inputSchema``.

    Raises:
        ValueError: a property name cannot be a Python parameter (keyword or not an identifier).
    """
    schema = tool.get("inputSchema") or {}
    required = set(schema.get("required") or [])
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
    for name, prop in (schema.get("properties") or {}).items():
        if not name.isidentifier() or keyword.iskeyword(name):
            raise ValueError(f"tool {tool['name']!r}: argument {name!r} is not a valid Python parameter name")
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=python_type(prop),
                                        default=inspect.Parameter.empty if name in required else UNSET))
    return inspect.Signature(params, return_annotation=str)


def _tool_method(tool: Mapping[str, Any], asynchronous: bool) -> Callable[..., Any]:
    name, signature = str(tool["name"]), tool_signature(tool)

    def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        bound = signature.bind(*args, **kwargs)
        return {k: v for k, v in bound.arguments.items() if k != "self" and v is not UNSET}

    def method(self: SimulatedTools, *args: Any, **kwargs: Any) -> str:
        call = self._call(name, arguments((self, *args), kwargs))
        over = self._over()
        return over if over is not None else self._result(self._require().step(call))

    async def amethod(self: SimulatedTools, *args: Any, **kwargs: Any) -> str:
        call = self._call(name, arguments((self, *args), kwargs))
        over = self._over()
        return over if over is not None else self._result(await self._require().astep(call))

    func: Any = amethod if asynchronous else method
    func.__name__ = func.__qualname__ = name
    func.__doc__ = tool_docstring(tool)
    func.__signature__ = signature
    func.__annotations__ = {p.name: p.annotation for p in list(signature.parameters.values())[1:]}
    func.__annotations__["return"] = str
    return func


class SimulatedTools:
    """Base of generated classes: one Simulator episode per ``reset``; tools are added per class.

    Only ``reset``, ``get_reward`` (when a reward is given) and the tools are public, since TRL
    exposes every other public method as a tool too. ``results`` holds the episode's step results;
    ``episode`` (an :class:`~agentworld.sim.episode.EpisodeTracker`) counts the calls against the
    class's ``max_turns``: once reached the episode is truncated and further calls answer with an
    error text without calling the simulator. A world-model answer that was cut off
    (``StepResult.truncated``) is returned like any other and does not end the episode.
    """

    spec: WorldSpec
    _model: ModelArg = None
    _reward: RewardFn | None = None
    _seed: int = 0
    _max_turns: int | None = None

    def __init__(self) -> None:
        model = type(self)._model
        backend = model() if callable(model) and not isinstance(model, ChatBackend) else model
        self._sim = Simulator(backend)
        self.episode = EpisodeTracker(type(self)._max_turns)
        self.results: list[StepResult] = []

    def reset(self, **kwargs: Any) -> str | None:
        """Start a new episode; dataset columns ``seed`` and ``spec`` (WorldSpec, dict or JSON) are used.

        Returns the initial state to append to the prompt when the world has one, else ``None``.
        """
        spec = kwargs.get("spec") or self.spec
        spec = spec if isinstance(spec, WorldSpec) else (
            WorldSpec.model_validate_json(spec) if isinstance(spec, str) else WorldSpec.model_validate(spec))
        seed = kwargs.get("seed")
        self._sim.reset(spec, seed=int(seed) if seed is not None else type(self)._seed)
        self.episode.start()
        self.results = []
        return f"\n\n{spec.initial_state}" if spec.initial_state else None

    def _require(self) -> Simulator:
        if not self.episode.started:
            raise RuntimeError(f"{type(self).__name__}: call reset() before calling a tool")
        return self._sim

    def _over(self) -> str | None:
        """The error text for a call after the episode ended (``None`` while it runs)."""
        self._require()
        if self.episode.active:
            return None
        return f"Error: the episode has ended (turn limit of {self.episode.max_turns} calls reached)"

    @staticmethod
    def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"tool_name": name, "arguments": arguments}

    def _result(self, result: StepResult) -> str:
        self.results.append(result)
        if self.episode.active:
            self.episode.record(result)
        return result.observation

    def _get_reward(self) -> float:
        reward = type(self)._reward
        return float(reward(self._require().state())) if reward is not None else 0.0

    def __enter__(self) -> SimulatedTools:
        return self

    def __exit__(self, *exc: object) -> None:
        self._sim.close()


def make_trl_environment(tools: list[dict[str, Any]], *, model: ModelArg, spec: WorldSpec | None = None,
                         reward: RewardFn | None = None, seed: int = 0, asynchronous: bool = False,
                         max_turns: int | None = None,
                         name: str = "SimulatedToolEnvironment") -> type[SimulatedTools]:
    """A class for ``GRPOTrainer(environment_factory=…)`` whose tools are simulated by the world model.

    Args:
        tools: MCP ``tools/list`` entries (``name``, ``description``, ``inputSchema``).
        model: the world model, or a zero-argument factory giving each instance its own (use a
            factory for backends holding connections: TRL builds one instance per rollout).
        spec: world (facts, faults, prompt); its tools are replaced by ``tools``, its domain by
            :data:`~agentworld.domains.TOOLS_DOMAIN` (MCP).
        reward: ``(SessionState) -> float``; adds ``get_reward()`` for reward functions to call.
        seed: episode seed when the dataset row has no ``seed`` column.
        asynchronous: make tool methods coroutines, so TRL runs the calls of all rollouts at once.
        max_turns: tool calls after which the episode is truncated (``None``: TRL's own limit only).
        name: the class name.

    Raises:
        ValueError: a tool name is reserved, private-looking or malformed.
    """
    namespace: dict[str, Any] = {
        "spec": (spec or WorldSpec()).model_copy(update={"domain": TOOLS_DOMAIN, "tools": list(tools)}),
        "_model": staticmethod(model) if callable(model) and not isinstance(model, ChatBackend) else model,
        "_reward": staticmethod(reward) if reward is not None else None, "_seed": seed,
        "_max_turns": max_turns,
        "__doc__": f"Simulated tools: {', '.join(str(t.get('name')) for t in tools)}."}
    for tool in tools:
        tool_name = str(tool.get("name"))
        if not _TOOL_NAME_RE.match(tool_name) or tool_name in RESERVED or tool_name in namespace:
            raise ValueError(f"tool name {tool_name!r} cannot be a method: it must start with a letter, "
                             "use letters, digits, '_', '-', '.', be unique and not be "
                             f"one of {sorted(RESERVED)}")
        namespace[tool_name] = _tool_method(tool, asynchronous)
    if reward is not None:
        def get_reward(self: SimulatedTools) -> float:
            """The episode's reward from the configured reward function."""
            return self._get_reward()
        namespace["get_reward"] = get_reward
    return type(name, (SimulatedTools,), namespace)


def environment_rewards(completions: list[Any], environments: list[Any] | None = None,
                        **_: Any) -> list[float | None]:
    """A TRL reward function reading ``get_reward()`` of each rollout's environment."""
    if environments is None:
        return [None] * len(completions)
    return [float(env.get_reward()) if hasattr(env, "get_reward") else None for env in environments]


def trl_environment(spec: WorldSpec, world_model: ChatBackend | Callable[[], ChatBackend] | None, *,
                    task_reward: RewardFn | None = None, seed: int = 0) -> type[SimulatedTools]:
    """A TRL ``environment_factory`` class for an MCP world (tools from ``spec.tools``)."""
    return make_trl_environment(list(spec.tools), model=world_model, spec=spec, reward=task_reward, seed=seed)


def trl_dataset_rows(spec: WorldSpec, curriculum: Curriculum, episodes: int, task: str,
                     seed: int = 0) -> list[dict[str, Any]]:
    """Dataset rows for ``GRPOTrainer``: ``prompt``, plus ``spec``/``seed`` the environment's reset reads.

    Each row's spec carries that episode's curriculum controls, so fault rates rise over the dataset.
    """
    return [{"prompt": [{"role": "user", "content": task}],
             "spec": curriculum.spec_for(spec, i, episodes).model_dump_json(), "seed": seed + i}
            for i in range(episodes)]

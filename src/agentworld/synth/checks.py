"""Checks that reject bad worlds before an agent ever sees them, each rejection with its reason.

Why: generated environments fail in ways that poison training silently: a tool schema no validator
accepts, a task naming a tool that does not exist, a goal the initial state already meets (the
verifier passes without any work, as users of Snowflake's Agent World Model report), a reference
plan that does not reach its goal, a world model that contradicts itself on the environment. The
checks run cheapest first and a world leaves at the first stage it fails (``report.STAGES``):

* ``load`` — the folder reads as a world (``invalid_world``);
* ``schema`` — every ``inputSchema`` passes its meta-schema and the safe validator
  (:func:`agentworld.sim.toolschema.compile_schema`: no remote ``$ref``, RE2 patterns) and is an
  object schema; tool names are unique (``tool_schema_invalid``, ``duplicate_tool``);
* ``references`` — tasks name only tools and entities that exist, and the reference plan's
  arguments fit the schemas; plans are at most ``max_plan_steps`` long (``unknown_tool``,
  ``unknown_entity``, ``invalid_plan_arguments``, ``plan_too_long``);
* ``goal`` — the initial state does not already meet a task's state conditions, and an empty plan
  fails the task (``goal_already_met``, ``empty_plan_passes``);
* ``reference_plan`` — each reference plan, run in the :class:`~agentworld.sim.session.Simulator`
  against the world model, reaches its success condition (``reference_plan_fails``);
* ``probe`` — one rollout (a read of each initial entity, every plan, then each read-only call
  again) contradicts the state ledger on at most ``max_contradiction_rate`` of its answered steps
  (``contradiction_budget``);
* ``duplicates`` — among the worlds left, near-duplicates of an earlier one (``near_duplicate``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentworld.domains.mcp.ledger import is_mutating, tool_noun
from agentworld.errors import AgentWorldError
from agentworld.models.base import ChatBackend
from agentworld.models.cache import ResponseCache
from agentworld.sim import toolschema
from agentworld.sim.controls import ToolValidator
from agentworld.sim.session import Simulator
from agentworld.synth.dedup import Scenario, find_duplicates
from agentworld.synth.report import CheckReport, CheckThresholds, Rejection, WorldVerdict
from agentworld.synth.world import PlanStep, Task, ToolStep, World, evaluate, final_state, load_world

__all__ = ["CheckThresholds", "ProbeResult", "arun_checks", "check_world", "run_checks", "static_rejections"]

SIM_STAGES = ("reference_plan", "probe")


class ProbeResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    steps: int
    contradicted: int
    examples: list[str] = Field(default_factory=list)


def _loaded(path: Path) -> World | Rejection:
    try:
        return load_world(path)
    except AgentWorldError as exc:
        return Rejection(reason="invalid_world", detail=str(exc))


def schema_rejections(world: World) -> list[Rejection]:
    out, seen = [], set()
    for tool in world.tools:
        if tool.name in seen:
            out.append(Rejection(reason="duplicate_tool", detail=f"tool {tool.name!r} is listed twice"))
        seen.add(tool.name)
        schema = tool.inputSchema
        try:
            toolschema.compile_schema(schema)
        except ValueError as exc:
            out.append(Rejection(reason="tool_schema_invalid", detail=f"tool {tool.name!r}: {exc}"))
            continue
        if schema.get("type") != "object":
            shown = json.dumps(schema.get("type"))
            out.append(Rejection(reason="tool_schema_invalid",
                                 detail=f"tool {tool.name!r}: an MCP inputSchema must have type 'object', "
                                        f"not {shown}"))
    return out


def _leaves(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    elif value is not None:
        yield str(value)


def reference_rejections(world: World, max_plan_steps: int = 50) -> list[Rejection]:
    names = {t.name for t in world.tools}
    kinds = set(world.initial_state.entities) | {tool_noun(n) for n in names}
    validator = ToolValidator([t.model_dump() for t in world.tools])
    out = []
    for task in world.tasks:
        def bad(reason: str, detail: str, task: Task = task) -> None:
            out.append(Rejection(reason=reason, detail=detail, task=task.id))

        if len(task.reference_plan) > max_plan_steps:
            bad("plan_too_long", f"the reference plan has {len(task.reference_plan)} steps, over the "
                f"{max_plan_steps}-step limit")
            continue
        named = {v for step in task.reference_plan for v in _leaves(step.arguments)}
        for k, step in enumerate(task.reference_plan, 1):
            if step.tool not in names:
                bad("unknown_tool", f"reference plan step {k} calls {step.tool!r}, which the world does "
                    "not have")
            elif (error := validator.check(step.tool, step.arguments)) is not None:
                bad("invalid_plan_arguments", f"reference plan step {k}: {error}")
        for cond in task.success.trace:
            if cond.tool not in names:
                bad("unknown_tool", f"trace condition names {cond.tool!r}, which the world does not have")
        for state in task.success.state:
            if state.kind not in kinds:
                bad("unknown_entity", f"state condition on kind {state.kind!r}, which neither the initial "
                    "state nor any tool has")
            elif state.id not in world.initial_state.entities.get(state.kind, {}) and state.id not in named:
                bad("unknown_entity", f"state condition on {state.kind} {state.id!r}, which the initial "
                    "state does not hold and the reference plan does not name")
    return out


def goal_rejections(world: World) -> list[Rejection]:
    out = []
    start = final_state(world, [])
    for task in world.tasks:
        if task.success.state:
            state_only = task.model_copy(update={"success": task.success.model_copy(update={"trace": []})})
            if evaluate(state_only, world.initial_state.entities, []).passed:
                out.append(Rejection(reason="goal_already_met", task=task.id,
                                     detail="the initial state already meets every state condition of "
                                            "the task"))
                continue
        if evaluate(task, start, []).passed:
            out.append(Rejection(reason="empty_plan_passes", task=task.id,
                                 detail="doing nothing passes the task's success condition"))
    return out


def static_rejections(world: World,
                      thresholds: CheckThresholds | None = None) -> tuple[str, list[Rejection]] | None:
    """The first static stage ``world`` fails and why (``None``: it passes them all); no model needed."""
    limits = thresholds or CheckThresholds()
    for stage, check in (("schema", schema_rejections),
                         ("references", lambda w: reference_rejections(w, limits.max_plan_steps)),
                         ("goal", goal_rejections)):
        found = check(world)
        if found:
            return stage, found
    return None


async def _episode(sim: Simulator, world: World, calls: Sequence[PlanStep],
                   seed: int) -> list[tuple[PlanStep, Any]]:
    await sim.areset(world.to_spec(), seed=seed)
    out = []
    for call in calls:
        result = await sim.astep({"tool_name": call.tool, "arguments": call.arguments})
        out.append((call, result))
    return out


async def plan_rejections(sim: Simulator, world: World, seed: int) -> list[Rejection]:
    out = []
    for task in world.tasks:
        ran = await _episode(sim, world, task.reference_plan, seed)
        steps = [ToolStep(c.tool, c.arguments, r.observation) for c, r in ran]
        verdict = evaluate(task, final_state(world, steps), [{"tool": c.tool, "arguments": c.arguments}
                                                               for c, _ in ran])
        if not verdict.passed:
            errors = [f"step {k} {c.tool} returned an error" for k, (c, r) in enumerate(ran, 1) if r.is_error]
            out.append(Rejection(reason="reference_plan_fails", task=task.id,
                                 detail="; ".join([*verdict.reasons, *errors])))
    return out


def entity_reads(world: World) -> list[PlanStep]:
    """A read of each initial entity that some read-only tool looks up by id alone.

    ``get_order(order_id)`` reads every ``order``: a tool qualifies when it does not mutate, its
    noun is the entity's kind and its only required argument is ``<kind>_id`` or ``id``.
    """
    readers: dict[str, tuple[str, str]] = {}
    for tool in world.tools:
        required = tool.inputSchema.get("required") or []
        kind = tool_noun(tool.name)
        if (not is_mutating(tool.name) and len(required) == 1 and required[0] in (f"{kind}_id", "id")
                and kind not in readers):
            readers[kind] = (tool.name, required[0])
    return [PlanStep(tool=readers[kind][0], arguments={readers[kind][1]: ident})
            for kind, items in world.initial_state.entities.items() if kind in readers for ident in items]


async def probe(sim: Simulator, world: World, thresholds: CheckThresholds) -> ProbeResult:
    """One episode: a read of each initial entity (:func:`entity_reads`), every reference plan, then
    each read-only call again (re-reads are what a ledger can contradict); at most
    ``probe_max_steps`` steps."""
    calls = [step for task in world.tasks for step in task.reference_plan]
    calls = [*entity_reads(world), *calls, *(step for step in calls if not is_mutating(step.tool))]
    ran = await _episode(sim, world, calls[:thresholds.probe_max_steps], thresholds.seed)
    answered = [(c, r) for c, r in ran if r.source in ("world_model", "cache")]
    hit = [(c, r) for c, r in answered if r.contradictions]
    examples = [f"{c.tool}: {r.contradictions[0]}" for c, r in hit[:3]]
    return ProbeResult(steps=len(answered), contradicted=len(hit), examples=examples)


async def _simulate(world: World, model: ChatBackend, thresholds: CheckThresholds,
                    cache: ResponseCache | None) -> tuple[str | None, list[Rejection], ProbeResult]:
    sim = Simulator(model, cache=cache, max_reasks=thresholds.max_reasks)
    try:
        found = await plan_rejections(sim, world, thresholds.seed)
        if found:
            return "reference_plan", found, ProbeResult(steps=0, contradicted=0)
        result = await probe(sim, world, thresholds)
    finally:
        await sim.aclose()
    rate = result.contradicted / result.steps if result.steps else 0.0
    if rate > thresholds.max_contradiction_rate:
        detail = (f"{result.contradicted} of {result.steps} probe steps contradicted the ledger ({rate:.0%}, "
                  f"budget {thresholds.max_contradiction_rate:.0%}): " + "; ".join(result.examples))
        return "probe", [Rejection(reason="contradiction_budget", detail=detail)], result
    return None, [], result


def _text(world: World) -> str:
    s = world.scenario
    return "\n".join([s.service, s.description, *s.users, *s.failure_modes])


async def arun_checks(world_dirs: Sequence[str | Path], *, model: ChatBackend | None,
                      thresholds: CheckThresholds | None = None, cache: ResponseCache | None = None,
                      concurrency: int = 8) -> CheckReport:
    """Check world folders (in the order given: the first of near-duplicates is kept).

    Args:
        model: the world model the simulator stages run against; ``None`` skips them (the report
            lists them as skipped).
        cache: response cache for the world-model calls (a re-run re-sends nothing).
        concurrency: worlds simulated at once.

    Raises:
        BackendError: the world model failed (not a fault of the world, so no world is rejected for it).
    """
    limits = thresholds or CheckThresholds()
    paths = [Path(p) for p in world_dirs]
    loaded = [_loaded(p) for p in paths]
    verdicts: list[WorldVerdict | None] = [None] * len(paths)
    for i, (path, world) in enumerate(zip(paths, loaded, strict=True)):
        if isinstance(world, Rejection):
            verdicts[i] = WorldVerdict(path=str(path), kept=False, stage="load", rejections=[world])
        elif (failed := static_rejections(world, limits)) is not None:
            verdicts[i] = WorldVerdict(path=str(path), name=world.name, kept=False, stage=failed[0],
                                       rejections=failed[1])
    probes: dict[int, ProbeResult] = {}
    if model is not None:
        gate = asyncio.Semaphore(max(1, concurrency))

        async def simulate(i: int, world: World) -> None:
            async with gate:
                stage, found, result = await _simulate(world, model, limits, cache)
            probes[i] = result
            if stage is not None:
                verdicts[i] = WorldVerdict(path=str(paths[i]), name=world.name, kept=False, stage=stage,
                                           rejections=found, probe_steps=result.steps,
                                           probe_contradictions=result.contradicted)

        await asyncio.gather(*(simulate(i, w) for i, w in enumerate(loaded)
                               if verdicts[i] is None and isinstance(w, World)))
    left = [i for i, v in enumerate(verdicts) if v is None]
    worlds = {i: w for i, w in enumerate(loaded) if isinstance(w, World)}
    items = [Scenario(_text(worlds[i]), frozenset(t.name.lower() for t in worlds[i].tools)) for i in left]
    for dup in find_duplicates(items, limits.duplicate_similarity, limits.text_weight):
        i, j = left[dup.index], left[dup.of]
        detail = (f"near-duplicate of {paths[j]} ({worlds[j].name!r}): similarity {dup.similarity:.2f} "
                  f"(scenario text {dup.text:.2f}, tool names {dup.tools:.2f}; threshold "
                  f"{limits.duplicate_similarity:.2f})")
        verdicts[i] = WorldVerdict(path=str(paths[i]), name=worlds[i].name, kept=False, stage="duplicates",
                                   rejections=[Rejection(reason="near_duplicate", detail=detail)])
    for i in left:
        if verdicts[i] is None:
            result = probes.get(i, ProbeResult(steps=0, contradicted=0))
            verdicts[i] = WorldVerdict(path=str(paths[i]), name=worlds[i].name, kept=True,
                                       probe_steps=result.steps, probe_contradictions=result.contradicted)
    return CheckReport(worlds=[v for v in verdicts if v is not None], thresholds=limits.model_dump(),
                       skipped=list(SIM_STAGES) if model is None else [])


def run_checks(world_dirs: Sequence[str | Path], *, model: ChatBackend | None,
               thresholds: CheckThresholds | None = None, cache: ResponseCache | None = None,
               concurrency: int = 8) -> CheckReport:
    """:func:`arun_checks` from synchronous code (not inside a running event loop)."""
    return asyncio.run(arun_checks(world_dirs, model=model, thresholds=thresholds, cache=cache,
                                   concurrency=concurrency))


def check_world(world_dir: str | Path, *, model: ChatBackend | None = None,
                thresholds: CheckThresholds | None = None) -> WorldVerdict:
    """One world folder's verdict (no near-duplicate stage: that compares worlds with each other)."""
    return run_checks([world_dir], model=model, thresholds=thresholds).worlds[0]

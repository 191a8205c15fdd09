"""``synth envs``: environments from seeds, stage by stage, concurrent and resumable.

Layout of ``OUT``::

    OUT/generator_cache.jsonl           every generator answer, journaled before use (resume after SIGKILL)
    OUT/summary.json                    environments generated and kept, rejected per stage and reason
    OUT/<env>/stages/01_scenario.json   each stage's typed, versioned output (or stages/rejected.json)
    OUT/<env>/world.json, tasks.jsonl   the world folder (served by ``serve mcp --world OUT/<env>``)
    OUT/<env>/status.json               generated, kept, and the rejections of the stages and checks

A stage file of the current version is reused; a request answered before a crash is answered again
from the cache; so a rerun of the same command sends no completed request twice and finishes every
environment once. :class:`Factory` only *generates*; an environment is *kept* once every world check
has passed (:mod:`agentworld.synth.checks`, near-duplicates across folders included), so one word
means one thing in the progress line, ``summary.json``, ``status.json`` and ``report.json``:
:func:`record_verdicts` writes the checks' verdicts into the first three.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel

from agentworld.io import atomic_write_text
from agentworld.models.base import ChatBackend, ChatRequest
from agentworld.models.cache import ResponseCache
from agentworld.schema import Message
from agentworld.synth.curricula import standard_controls
from agentworld.synth.report import CheckReport
from agentworld.synth.seeds import Seed
from agentworld.synth.stages import (
    STAGE_VERSIONS,
    STAGES,
    SYSTEM,
    PlansOut,
    StageRejection,
    TasksOut,
    ToolsOut,
    parse,
    prompt,
)
from agentworld.synth.world import InitialState, Provenance, Scenario, Task, World, save_world


class EnvOutcome(NamedTuple):
    name: str
    generated: bool
    rejections: list[dict[str, Any]]


class Generation(BaseModel):
    """What :meth:`Factory.run` made: environments through every stage, the rest rejected by a stage."""

    environments: int
    generated: int
    rejected_by_stage: dict[str, int]
    rejected_by_reason: dict[str, int]
    requests_sent: int
    requests_cached: int


class Summary(Generation):
    """``summary.json``: the generation plus the world checks; ``kept`` passed every stage and check."""

    kept: int


def env_name(index: int) -> str:
    return f"env_{index:05d}"


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")


class Factory:
    """Runs the stages of many environments against one generator, ``concurrency`` requests at once."""

    def __init__(
        self,
        backend: ChatBackend,
        out: Path,
        *,
        model: str,
        concurrency: int = 8,
        max_tokens: int | None = 4096,
        advance: Any = None,
        controls: bool = True,
        per_seed: int = 1,
    ) -> None:
        self.backend, self.out, self.model, self.max_tokens = backend, out, model, max_tokens
        self.controls, self.per_seed = controls, per_seed
        self.semaphore = asyncio.Semaphore(concurrency)
        self.cache = ResponseCache(out / "generator_cache.jsonl")
        self.advance = advance or (lambda stage: None)

    async def run(self, seeds: list[Seed]) -> Generation:
        """Generate ``per_seed`` environments per seed; the checks that decide what is kept come after."""
        k = self.per_seed
        try:
            outcomes = await asyncio.gather(*(self.environment(env_name(i * k + v), s, v if k > 1 else None)
                                              for i, s in enumerate(seeds) for v in range(k)))
        finally:
            self.cache.close()
        stages, reasons = _tally(r for o in outcomes for r in o.rejections)
        return Generation(
            environments=len(outcomes),
            generated=sum(o.generated for o in outcomes),
            rejected_by_stage=stages,
            rejected_by_reason=reasons,
            requests_sent=self.cache.misses,
            requests_cached=self.cache.hits,
        )

    async def environment(self, name: str, seed: Seed, variant: int | None = None) -> EnvOutcome:
        """One environment of ``seed``; ``variant``: which of its ``--per-seed`` variants (in prompts)."""
        root = self.out / name
        status = root / "status.json"
        done = json.loads(status.read_text("utf-8")) if status.exists() else None
        if done is not None and (done.get("seed"), done.get("variant")) == (seed.id, variant):
            for stage in STAGES:
                self.advance(stage)
            generated = bool(done.get("generated", done.get("kept")))
            stage_rejections = [r for r in done.get("rejections", []) if r.get("stage") in STAGES]
            return EnvOutcome(name, generated, stage_rejections)
        outputs: dict[str, Any] = {}
        digest = seed.model_dump(exclude={"tools"})
        for number, stage in enumerate(STAGES, 1):
            inputs = self._inputs(stage, digest, outputs)
            if variant is not None:
                inputs["variant"] = variant
            result = (
                ToolsOut.model_validate({"tools": seed.tools})
                if stage == "tools" and seed.tools
                else await self._stage(
                    root / "stages" / f"{number:02d}_{stage}.json", name, stage, inputs, seed.id
                )
            )
            self.advance(stage)
            if isinstance(result, StageRejection):
                rejection = result._asdict()
                _write_json(root / "stages" / "rejected.json", rejection)
                for later in STAGES[number:]:
                    self.advance(later)
                return self._finish(root, name, seed.id, False, [rejection], variant)
            outputs[stage] = result
        world = self._world(name, seed, outputs)
        if self.controls:
            world = world.model_copy(update={"controls": standard_controls(world)})
        save_world(world, root)
        return self._finish(root, name, seed.id, True, [], variant)

    def _finish(self, root: Path, name: str, seed: str, generated: bool, rejections: list[dict[str, Any]],
                variant: int | None = None) -> EnvOutcome:
        extra = {} if variant is None else {"variant": variant}
        _write_json(root / "status.json", {"seed": seed, **extra, "generated": generated, "kept": False,
                                           "rejections": rejections})
        return EnvOutcome(name, generated, rejections)

    @staticmethod
    def _inputs(stage: str, digest: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
        inputs: dict[str, Any] = {"seed": digest}
        for earlier in STAGES[: STAGES.index(stage)]:
            inputs[earlier] = outputs[earlier].model_dump(mode="json")
        if "tools" in inputs:
            inputs["tools"] = inputs["tools"]["tools"]
        if "tasks" in inputs:
            inputs["tasks"] = inputs["tasks"]["tasks"]
        return inputs

    async def _stage(self, path: Path, name: str, stage: str, inputs: dict[str, Any], seed: str) -> Any:
        from agentworld.synth.stages import MODELS

        text = prompt(stage, inputs)
        digest = hashlib.sha256(text.encode()).hexdigest()
        if path.exists():
            saved = json.loads(path.read_text("utf-8"))
            if (saved.get("version"), saved.get("inputs_sha256")) == (STAGE_VERSIONS[stage], digest):
                return MODELS[stage].model_validate(saved["output"])
        request = ChatRequest(
            messages=(Message(role="system", content=SYSTEM), Message(role="user", content=text)),
            model=self.model,
            max_tokens=self.max_tokens,
            temperature=0.0,
            seed=0,
        )
        async with self.semaphore:
            answer = (await self.cache.call(self.backend, request)).result
        result = parse(stage, answer.content)
        if not isinstance(result, StageRejection):
            _write_json(
                path,
                {
                    "stage": stage,
                    "version": STAGE_VERSIONS[stage],
                    "env": name,
                    "seed": seed,
                    "inputs_sha256": digest,
                    "output": result.model_dump(mode="json"),
                },
            )
        return result

    def _world(self, name: str, seed: Seed, outputs: dict[str, Any]) -> World:
        tasks_out: TasksOut = outputs["tasks"]
        plans: PlansOut = outputs["plans"]
        tools: ToolsOut = outputs["tools"]
        tasks = [
            Task(
                id=t.id,
                instruction=t.instruction,
                success=t.success,
                reference_plan=plans.plans.get(t.id, []),
                reference_answer=t.reference_answer,
            )
            for t in tasks_out.tasks
        ]
        return World(
            name=name,
            scenario=Scenario.model_validate(outputs["scenario"].model_dump()),
            tools=tools.tools,
            tasks=tasks,
            initial_state=InitialState.model_validate(outputs["initial_state"].model_dump()),
            provenance=Provenance(
                seeds=[seed.id], generator=self.backend.name, stage_versions=STAGE_VERSIONS
            ),
        )


def _tally(rejections: Iterable[dict[str, Any]]) -> tuple[dict[str, int], dict[str, int]]:
    stages: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for rejection in rejections:
        stages[str(rejection.get("stage", "checks"))] += 1
        reasons[str(rejection.get("reason", "unknown"))] += 1
    return dict(stages), dict(reasons)


def record_verdicts(out: Path, generation: Generation, report: CheckReport) -> Summary:
    """Write the world checks' verdicts into each ``status.json`` and ``summary.json``; the summary.

    ``kept`` is then the same number everywhere: environments whose world passed every stage and every
    check (``report.json``'s ``kept``); a world the checks reject carries their reasons beside the stages'.
    """
    check_rejections: list[dict[str, Any]] = []
    for verdict in report.worlds:
        status_path = Path(verdict.path) / "status.json"
        status = json.loads(status_path.read_text("utf-8")) if status_path.exists() else {}
        stage = verdict.stage or "checks"
        found = [{"stage": stage, **r.model_dump(mode="json")} for r in verdict.rejections]
        check_rejections += found
        earlier = [r for r in status.get("rejections", []) if r.get("stage") in STAGES]
        _write_json(status_path, {**status, "generated": True, "kept": verdict.kept,
                                  "rejections": earlier + found})
    stages, reasons = _tally(check_rejections)
    summary = Summary(
        **generation.model_dump(exclude={"rejected_by_stage", "rejected_by_reason"}),
        kept=len(report.kept),
        rejected_by_stage=dict(Counter(generation.rejected_by_stage) + Counter(stages)),
        rejected_by_reason=dict(Counter(generation.rejected_by_reason) + Counter(reasons)),
    )
    _write_json(out / "summary.json", summary.model_dump())
    return summary

"""The stages of ``synth envs``: scenario → tools → initial state → tasks → reference plans.

Each stage is one generator request whose prompt asks for one JSON object, a pydantic model that
checks the answer, and a versioned file per environment (``stages/01_scenario.json`` …). A stage's
inputs travel in the prompt between ``<inputs>`` tags as canonical JSON, so the same inputs make
the same request (the response cache answers it again after a crash) and a scripted generator can
read them. An answer that does not parse or validate becomes a :class:`StageRejection`.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentworld.synth.world import InitialState, PlanStep, Scenario, Success, ToolDef

STAGES: tuple[str, ...] = ("scenario", "tools", "initial_state", "tasks", "plans")
STAGE_VERSIONS: dict[str, int] = dict.fromkeys(STAGES, 1)
"""Bump a stage's version when its prompt or model changes: files of an older version are redone."""

SYSTEM = ("You design simulated tool-using environments for training AI agents: realistic services with "
          "MCP tools, concrete data and checkable tasks. Answer with exactly one JSON object and nothing "
          "else.")

INSTRUCTIONS: dict[str, str] = {
    "scenario": 'Invent the service the seed comes from. Answer {"service": "<short name>", "description": '
                '"<what it does, 2-4 sentences>", "users": ["<who uses it>"], "failure_modes": ["<what can '
                'go wrong>"]}.',
    "tools": 'Write the service\'s MCP tools (reads and writes). Answer {"tools": [{"name": "<snake_case>", '
             '"description": "...", "inputSchema": {"type": "object", "properties": {...}, "required": '
             '[...]}}]}.',
    "initial_state": 'Write the service\'s data at the start: entities by kind and id, each a flat object of '
                     'fields. Answer {"entities": {"<kind>": {"<id>": {"<field>": <value>}}}}.',
    "tasks": 'Write tasks an agent can do with the tools, each checked by rules: over the final entity state '
             '({"kind", "id", "field", "op": eq|ne|contains|exists|absent|gt|lt, "value"}) and/or over the '
             'tool calls ({"tool", "arguments": {subset}, "op": called|not_called}). The initial state must '
             'not already satisfy a task. Answer {"tasks": [{"id": "...", "instruction": "...", "success": '
             '{"state": [...], "trace": [...]}, "reference_answer": null}]}.',
    "plans": 'For each task, the tool calls that solve it, in order. Answer {"plans": {"<task id>": '
             '[{"tool": "<name>", "arguments": {...}}]}}.',
}


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", allow_inf_nan=False)


class ToolsOut(_Out):
    tools: list[ToolDef] = Field(min_length=1, max_length=200)


class TaskDraft(_Out):
    id: str = Field(min_length=1, max_length=200)
    instruction: str = Field(min_length=1)
    success: Success
    reference_answer: Any = None


class TasksOut(_Out):
    tasks: list[TaskDraft] = Field(min_length=1, max_length=200)


class PlansOut(_Out):
    plans: dict[str, list[PlanStep]]


class ScenarioOut(Scenario):
    model_config = ConfigDict(frozen=True, extra="ignore", allow_inf_nan=False)


class InitialStateOut(InitialState):
    model_config = ConfigDict(frozen=True, extra="ignore", allow_inf_nan=False)


MODELS: dict[str, type[BaseModel]] = {"scenario": ScenarioOut, "tools": ToolsOut,
                                      "initial_state": InitialStateOut, "tasks": TasksOut, "plans": PlansOut}


class StageRejection(NamedTuple):
    """Why an environment stopped at a stage (recorded in its ``stages/rejected.json``)."""

    stage: str
    reason: str
    detail: str


def prompt(stage: str, inputs: dict[str, Any]) -> str:
    """The user message of a stage: its instruction, then its inputs as canonical JSON."""
    body = json.dumps(inputs, ensure_ascii=False, sort_keys=True, indent=1)
    variant = ("" if "variant" not in inputs else f"\nThis is variant {inputs['variant']} of this seed: "
               "make it differ from the others (other entities and values, another mix of tools, other "
               "tasks).")
    return f"Stage: {stage}\n{INSTRUCTIONS[stage]}{variant}\n\n<inputs>\n{body}\n</inputs>"


def read_inputs(text: str) -> tuple[str, dict[str, Any]]:
    """The stage and inputs of a stage prompt (what a scripted generator reads)."""
    stage = re.match(r"Stage: (\w+)", text)
    found = re.search(r"<inputs>\n(.*)\n</inputs>", text, re.S)
    if not stage or not found:
        raise ValueError("not a synth stage prompt")
    return stage.group(1), json.loads(found.group(1))


def parse(stage: str, answer: str) -> BaseModel | StageRejection:
    """The stage's typed output from the generator's answer, or why it was refused."""
    text = re.sub(r"^\s*```(?:json)?\s*|\s*```\s*$", "", answer.strip())
    start = text.find("{")
    try:
        data, _ = json.JSONDecoder().raw_decode(text[start:]) if start >= 0 else (None, 0)
    except ValueError as exc:
        return StageRejection(stage, "unparsable_json", str(exc)[:300])
    if not isinstance(data, dict):
        return StageRejection(stage, "unparsable_json", "no JSON object in the answer")
    try:
        return MODELS[stage].model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or stage
        return StageRejection(stage, "invalid_output", f"{where}: {err['msg']}"[:300])

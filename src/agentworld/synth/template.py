"""``synth-template``: an offline generator that answers every stage from the seed alone, without a model.

It makes the pipeline runnable anywhere (the README's example, tests, benchmarks). With one
environment per seed, tools are the seed's tool calls with schemas inferred from their arguments,
the initial state is the entities the seed's read-only results showed, and the tasks replay the
seed's state-changing calls, checked on the trace. With ``--per-seed K`` each prompt carries a
``variant`` and the answers come from :mod:`agentworld.synth.variants`: new entities, a tool set of
the variant's own and multi-step tasks checked on the final state. A real generator model invents
far more; this one shows the shape and gives offline runs worlds worth acting in.
"""

from __future__ import annotations

import json
from typing import Any

from agentworld.domains.mcp.ledger import entities, is_mutating, parse_json, tool_noun
from agentworld.models.base import ChatRequest, ChatResult, register_backend
from agentworld.models.scripted import ScriptedBackend
from agentworld.synth.stages import read_inputs

NAME = "synth-template"
MAX_TASKS = 3


def schema_of(value: Any) -> dict[str, Any]:
    """The JSON schema type of an argument value a seed showed."""
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, list):
        return {"type": "array"}
    if isinstance(value, dict):
        return {"type": "object"}
    return {"type": "string"}


def _calls(inputs: dict[str, Any]) -> list[dict[str, Any]]:
    return list(inputs.get("seed", {}).get("calls", []))


def _scenario(inputs: dict[str, Any]) -> dict[str, Any]:
    seed = inputs["seed"]
    context = seed.get("context", "")
    title = next((line.lstrip("# ").strip() for line in context.splitlines() if line.startswith("#")), "")
    errors = sorted(
        {c["observation"][:80] for c in _calls(inputs) if c["observation"].lower().startswith("error")}
    )
    return {
        "service": (title or seed["id"])[:200],
        "description": context[:400] or f"Service of seed {seed['id']}.",
        "users": ["customer", "support agent"],
        "failure_modes": errors or ["invalid arguments"],
    }


def _tools(inputs: dict[str, Any]) -> dict[str, Any]:
    tools: dict[str, dict[str, Any]] = {}
    for call in _calls(inputs):
        props = tools.setdefault(call["tool"], {})
        props.update({k: schema_of(v) for k, v in call["arguments"].items()})
    if not tools:
        tools["get_item"] = {"id": {"type": "string"}}
    return {
        "tools": [
            {
                "name": name,
                "description": f"{name.replace('_', ' ')} ({'changes' if is_mutating(name) else 'reads'} "
                f"data).",
                "inputSchema": {"type": "object", "properties": props, "required": sorted(props)},
            }
            for name, props in tools.items()
        ]
    }


def _initial_state(inputs: dict[str, Any]) -> dict[str, Any]:
    state: dict[str, dict[str, dict[str, Any]]] = {}
    for call in _calls(inputs):
        parsed = parse_json(call["observation"])
        if is_mutating(call["tool"]) or parsed is None:
            continue
        for (kind, ident), obj in entities(parsed[0], tool_noun(call["tool"])):
            state.setdefault(kind, {}).setdefault(ident, {}).update(obj)
    return {"entities": state or {"item": {"I1": {"status": "open"}}}}


def _tasks(inputs: dict[str, Any]) -> dict[str, Any]:
    names = {t["name"] for t in inputs["tools"]}
    calls = [c for c in _calls(inputs) if c["tool"] in names]
    chosen = [c for c in calls if is_mutating(c["tool"])][:MAX_TASKS] or calls[:1]
    if not chosen:
        first = inputs["tools"][0]
        chosen = [{"tool": first["name"], "arguments": _required(first.get("inputSchema") or {})}]
    return {
        "tasks": [
            {
                "id": f"task-{i}",
                "instruction": f"Call {c['tool']} with {json.dumps(c['arguments'], sort_keys=True)}.",
                "success": {"trace": [{"tool": c["tool"], "arguments": c["arguments"]}]},
                "reference_answer": None,
            }
            for i, c in enumerate(chosen, 1)
        ]
    }


def _required(schema: dict[str, Any]) -> dict[str, Any]:
    """Placeholder values for a schema's required properties (a plan the tool's schema accepts)."""
    props = schema.get("properties") or {}
    samples = {"string": "x", "integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}
    out = {}
    for name in schema.get("required") or []:
        spec = props.get(name) or {}
        enum, kind = spec.get("enum"), spec.get("type")
        out[name] = enum[0] if enum else samples.get(kind if isinstance(kind, str) else "string", "x")
    return out


def _plans(inputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "plans": {
            t["id"]: [{"tool": c["tool"], "arguments": c["arguments"]} for c in t["success"]["trace"]]
            for t in inputs["tasks"]
        }
    }


ANSWERS = {
    "scenario": _scenario,
    "tools": _tools,
    "initial_state": _initial_state,
    "tasks": _tasks,
    "plans": _plans,
}


def _variant_answer(stage: str, inputs: dict[str, Any]) -> dict[str, Any]:
    from agentworld.synth.variants import blueprint

    plan = blueprint(inputs["seed"], int(inputs["variant"]))
    if stage == "scenario":
        return dict(plan["scenario"])
    if stage == "tools":
        return {"tools": plan["tools"]}
    if stage == "initial_state":
        return {"entities": plan["entities"]}
    if stage == "tasks":
        return {"tasks": [{"id": t["id"], "instruction": t["instruction"], "success": {"state": t["state"]},
                           "reference_answer": None} for t in plan["tasks"]]}
    return {"plans": {t["id"]: t["plan"] for t in plan["tasks"]}}


def answer(request: ChatRequest) -> str:
    """The template's answer to a stage prompt (JSON text)."""
    stage, inputs = read_inputs(request.messages[-1].content)
    if "variant" in inputs:
        return json.dumps(_variant_answer(stage, inputs), ensure_ascii=False)
    return json.dumps(ANSWERS[stage](inputs), ensure_ascii=False)


@register_backend(NAME)
def template_backend(**_: Any) -> ScriptedBackend:
    """The offline generator (``--generator-model synth-template`` without a base URL)."""

    def reply(request: ChatRequest) -> ChatResult:
        return ChatResult(content=answer(request), source=NAME, model=NAME)

    return ScriptedBackend(default=reply, name=NAME)

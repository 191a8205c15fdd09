"""A fictional MCP world: the bible's entity store behind get/list/search/update tools, as a world folder.

Why a world folder: ``serve mcp --world DIR`` (and the adapters, ``train rollout``) serve it like any
synthesized environment — the entity table is the initial state the MCP ledger starts from, so every
simulated answer is checked against the bible's entities. :class:`EntityStore` runs the same tools for
real over a copy of the table: the grounded answers the reference plans are checked with.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from agentworld.domains import TOOLS_DOMAIN
from agentworld.synth.fiction.bible import Bible, Scalar, label, normalise, render_value
from agentworld.synth.fiction.tasks import table_answer

MAX_LIST = 200
_VERBS = ("get_", "list_", "search_", "update_")


def _plural(kind: str) -> str:
    return kind + ("es" if kind.endswith(("s", "x", "ch", "sh")) else "s")


def mcp_tools(bible: Bible) -> list[dict[str, Any]]:
    """``tools/list`` entries: per kind ``get_<kind>``, ``list_<kinds>``, ``search_<kinds>`` and
    ``update_<kind>``."""
    tools: list[dict[str, Any]] = []
    for kind in bible.kinds():
        fields = sorted({a for e in bible.entities if e.kind == kind for a in e.attributes})
        props = {a: {"type": ["string", "number"]} for a in fields}
        tools += [
            {"name": f"get_{kind}", "description": f"Get one {kind} of {bible.topic} by id.",
             "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"],
                             "additionalProperties": False}},
            {"name": f"list_{_plural(kind)}", "description": f"List every {kind} (id, name and fields).",
             "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False}},
            {"name": f"search_{_plural(kind)}",
             "description": f"Find {_plural(kind)} whose name or any field contains the query "
                            "(case-insensitive).",
             "inputSchema": {"type": "object", "properties": {"query": {"type": "string", "minLength": 1}},
                             "required": ["query"], "additionalProperties": False}},
            {"name": f"update_{kind}",
             "description": f"Change fields of one {kind}; returns the updated {kind}.",
             "inputSchema": {"type": "object", "properties": {
                 "id": {"type": "string"},
                 "fields": {"type": "object", "properties": props, "additionalProperties": False,
                            "minProperties": 1}},
                 "required": ["id", "fields"], "additionalProperties": False}},
        ]
    return tools


def entity_table(bible: Bible) -> dict[str, dict[str, dict[str, Scalar]]]:
    """``{kind: {id: {"name": ..., field: value}}}``: the world folder's initial entities."""
    out: dict[str, dict[str, dict[str, Scalar]]] = {}
    for e in bible.entities:
        out.setdefault(e.kind, {})[e.id] = {"name": e.name, **e.attributes}
    return out


class EntityStore:
    """The grounded tools over a copy of the entity table (updates change the copy only)."""

    def __init__(self, bible: Bible) -> None:
        self.state = copy.deepcopy(entity_table(bible))
        self.kinds = {k: k for k in self.state} | {_plural(k): k for k in self.state}

    def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """The JSON text a tool answers; an unknown tool, id or field answers ``{"error": ...}``."""
        verb, _, noun = tool.partition("_")
        kind = self.kinds.get(noun)
        if kind is None or f"{verb}_" not in _VERBS:
            return json.dumps({"error": f"unknown tool {tool!r}"})
        rows = self.state[kind]
        if tool.startswith("list_"):
            return json.dumps({_plural(kind): [{"id": i, **f} for i, f in list(rows.items())[:MAX_LIST]]})
        if tool.startswith("search_"):
            q = normalise(str(arguments.get("query", "")))
            hits = [{"id": i, **f} for i, f in rows.items()
                    if q and any(q in normalise(render_value(v)) for v in f.values())]
            return json.dumps({_plural(kind): hits[:MAX_LIST]})
        ident = str(arguments.get("id", ""))
        if ident not in rows:
            return json.dumps({"error": f"no {kind} with id {ident!r}"})
        if tool.startswith("update_"):
            fields = arguments.get("fields")
            if not isinstance(fields, dict) or not fields:
                return json.dumps({"error": "update needs 'fields' (a non-empty object)"})
            unknown = sorted(set(fields) - set(rows[ident]) - {"name"})
            if unknown:
                return json.dumps({"error": f"{kind} has no field {unknown[0]!r}"})
            rows[ident].update(fields)
        return json.dumps({kind: {"id": ident, **rows[ident]}})


def mcp_tasks(bible: Bible, limit: int = 20) -> list[dict[str, Any]]:
    """Read tasks (a fact, a table by ``list_<kinds>``) with reference answers, and update tasks whose
    success is a state condition the initial table does not meet, plus the trace of the update call."""
    out: list[dict[str, Any]] = []
    for kind in bible.kinds():
        members = sorted((e for e in bible.entities if e.kind == kind), key=lambda e: e.name)
        attributes = [a for a in members[0].attributes if all(a in m.attributes for m in members)]
        out.append({"id": f"table-{kind}", "instruction": f"Make a table of every {kind} with its "
                    + ", ".join(label(a) for a in attributes) + ", name first.",
                    "success": {"state": [], "trace": [{"tool": f"list_{_plural(kind)}", "arguments": {},
                                                        "op": "called"}]},
                    "reference_plan": [{"tool": f"list_{_plural(kind)}", "arguments": {}}],
                    "reference_answer": table_answer(members, attributes)})
        for e in members[:2]:
            a = attributes[0]
            out.append({"id": f"fact-{e.id}-{a}", "instruction": f"What is the {label(a)} of the {kind} "
                        f"{e.name}?", "success": {"state": [], "trace": [
                            {"tool": f"search_{_plural(kind)}", "arguments": {}, "op": "called"}]},
                        "reference_plan": [{"tool": f"search_{_plural(kind)}",
                                            "arguments": {"query": e.name}}],
                        "reference_answer": render_value(e.attributes[a])})
            text = next((b for b in attributes if isinstance(e.attributes[b], str)), None)
            if text is not None:
                new = f"{e.attributes[text]} (revised)"
                out.append({"id": f"update-{e.id}-{text}", "instruction": f"Record that the {label(text)} of "
                            f"the {kind} {e.name} is now {new!r}.",
                            "success": {"state": [{"kind": kind, "id": e.id, "field": text, "op": "eq",
                                                   "value": new}],
                                        "trace": [{"tool": f"update_{kind}", "arguments": {"id": e.id},
                                                   "op": "called"}]},
                            "reference_plan": [{"tool": f"update_{kind}",
                                                "arguments": {"id": e.id, "fields": {text: new}}}],
                            "reference_answer": None})
    return out[:limit] if limit else out


def world_document(bible: Bible, generator: str = "procedural") -> dict[str, Any]:
    """The ``world.json`` content (world folder version 1) of the bible's MCP world."""
    kinds = ", ".join(_plural(k) for k in bible.kinds())
    return {"version": 1, "name": f"fiction-{bible.base_url.split('//', 1)[-1].split('.', 1)[0]}",
            "domain": TOOLS_DOMAIN,
            "scenario": {"service": f"{bible.topic} registry",
                         "description": f"The records service of the fictional world {bible.topic}: {kinds}.",
                         "users": ["archivist", "researcher"],
                         "failure_modes": ["unknown id", "unknown field"]},
            "tools": mcp_tools(bible),
            "initial_state": {"entities": entity_table(bible)},
            "provenance": {"seeds": [f"topic:{bible.topic}"], "generator": generator,
                           "stage_versions": {"bible": 1}}}

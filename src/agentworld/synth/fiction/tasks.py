"""Tasks with reference answers derived from the bible: single facts and WideSearch-style tables.

Why derived, not generated: a reference answer read off the entity table is right by construction,
and the reference plan (a search, then the page that states the fact) is checked to lead to it.
Tasks are world-folder tasks (``id``, ``instruction``, ``success``, ``reference_plan``,
``reference_answer``); a table's reference answer is ``{"columns": [...], "rows": [[...], ...]}``.
"""

from __future__ import annotations

import random
from typing import Any

from agentworld.synth.fiction.bible import Bible, Entity, label, render_value


def _task(task_id: str, instruction: str, plan: list[dict[str, Any]], answer: Any) -> dict[str, Any]:
    """A world-folder task; success needs the plan's first tool called (the answer is scored apart)."""
    trace = [{"tool": plan[0]["tool"], "arguments": {}, "op": "called"}]
    return {"id": task_id, "instruction": instruction, "success": {"state": [], "trace": trace},
            "reference_plan": plan, "reference_answer": answer}


def fact_tasks(bible: Bible, limit: int = 50, seed: int = 0) -> list[dict[str, Any]]:
    """One question per (entity, attribute), a seeded sample of ``limit``; the plan finds the profile."""
    pairs = [(e, a) for e in bible.entities for a in e.attributes]
    random.Random(seed).shuffle(pairs)
    out = []
    for e, a in pairs[:limit]:
        doc = next((d for d in bible.documents
                    if any(f.entity == e.id and f.attribute == a for f in d.facts)), None)
        plan: list[dict[str, Any]] = [{"tool": "web_search", "arguments": {"query": f"{e.name} {label(a)}"}}]
        if doc is not None:
            plan.append({"tool": "web_extractor", "arguments": {"url": bible.url(doc), "goal": label(a)}})
        out.append(_task(f"fact-{e.id}-{a}", f"In the world of {bible.topic}, what is the {label(a)} of "
                         f"{e.name}?", plan, render_value(e.attributes[a])))
    return out


def table_answer(entities: list[Entity], attributes: list[str]) -> dict[str, Any]:
    """The reference table: one row per entity (name first), one column per attribute."""
    return {"columns": ["name", *(label(a) for a in attributes)],
            "rows": [[e.name, *(render_value(e.attributes[a]) for a in attributes)] for e in entities]}


def table_tasks(bible: Bible) -> list[dict[str, Any]]:
    """Per kind: every entity × every attribute; and, where a text attribute splits the kind, the
    entities with one value of it × the other attributes."""
    out = []
    for kind in bible.kinds():
        members = sorted((e for e in bible.entities if e.kind == kind), key=lambda e: e.name)
        attributes = list(dict.fromkeys(a for e in members for a in e.attributes
                                        if all(a in m.attributes for m in members)))
        if len(members) < 2 or not attributes:
            continue
        plan: list[dict[str, Any]] = [{"tool": "web_search",
                                       "arguments": {"query": f"list of {kind}s {bible.topic}"}}]
        if any(d.id == f"list/{kind}" for d in bible.documents):
            plan.append({"tool": "web_extractor", "arguments": {"url": bible.base_url + f"list/{kind}"}})
        listed = ", ".join(label(a) for a in attributes)
        out.append(_task(f"table-{kind}", f"Make a table of every {kind} of {bible.topic} with its {listed}. "
                         f"One row per {kind}, name first.", plan, table_answer(members, attributes)))
        for a in attributes:
            values = sorted({str(e.attributes[a]) for e in members if isinstance(e.attributes[a], str)})
            groups = [(v, [e for e in members if e.attributes[a] == v]) for v in values]
            group = next(((v, g) for v, g in groups if 2 <= len(g) < len(members)), None)
            if group is not None:
                rest = [b for b in attributes if b != a]
                others = ", ".join(label(b) for b in rest)
                out.append(_task(f"table-{kind}-{a}", f"Which {kind}s of {bible.topic} have {label(a)} "
                                 f"{group[0]}? Table them with their {others}.", plan,
                                 table_answer(group[1], rest)))
                break
    return out

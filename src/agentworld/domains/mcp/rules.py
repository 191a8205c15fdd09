"""MCP's rules: a JSON result is compared field by field, by JSON structure and deterministic fields.

A result becomes ``$.path=value`` leaves; a field whose value the call's arguments or an earlier
result already showed is deterministic. Structure is valid JSON of the truth's type with its keys and
value types. The frame-only prediction is an empty result of the truth's shape.
"""

from __future__ import annotations

import json
from typing import Any

from agentworld.domains.actions import tool_call
from agentworld.domains.rules import (
    DomainRules,
    Session,
    Tier,
    clean,
    generic_tiers,
    lines_of,
    ratio,
    shape_structure,
)


def _json(text: str) -> Any:
    try:
        return json.loads(clean(text))
    except ValueError:
        return None


def _leaves(value: Any, path: str = "$") -> list[str]:
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _leaves(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [x for i, v in enumerate(value) for x in _leaves(v, f"{path}[{i}]")]
    return [f"{path}={json.dumps(value, ensure_ascii=False)}"]


def mcp_units(text: str) -> list[str]:
    """JSON results become ``$.path=value`` leaves (field-level matching); other text, lines."""
    value = _json(text)
    return _leaves(value) if isinstance(value, dict | list) else lines_of(text)


def mcp_tiers(units: list[str], session: Session) -> list[Tier]:
    """A field whose value the call's arguments or an earlier result already showed is deterministic."""
    known: set[str] = set()
    call = tool_call(session.action)
    for value in [*(call[1].values() if call else ()), *(_json(o) for _, o in session.history)]:
        known.update(u.split("=", 1)[-1] for u in _leaves(value))
    tiers = generic_tiers(units, session)
    return ["deterministic" if "=" in u and u.split("=", 1)[1] in known and tier != "metadata" else tier
            for u, tier in zip(units, tiers, strict=True)]


def json_structure(pred: str, truth: str, session: Session) -> tuple[float, dict[str, float]]:
    """Valid JSON where the truth is JSON, same type, same top-level keys and value types."""
    t, p = _json(truth), _json(pred)
    if not isinstance(t, dict | list):
        return shape_structure(pred, truth, session)
    checks = {"valid_json": float(isinstance(p, dict | list)), "same_type": float(type(p) is type(t))}
    if isinstance(t, list) and isinstance(p, list):
        checks["length"] = ratio(len(p), len(t))
        t, p = (t[0] if t else {}), (p[0] if p else {})
    if isinstance(t, dict) and t:
        keys = set(t) | set(p) if isinstance(p, dict) else set(t)
        both = set(t) & set(p) if isinstance(p, dict) else set()
        checks["keys"] = len(both) / len(keys)
        checks["value_types"] = (sum(type(t[k]) is type(p[k]) for k in both) / len(both)
                                 if both else 0.0)
    return 100 * sum(checks.values()) / len(checks), checks


def mcp_frame_only(truth: str, _: Session) -> str:
    """An empty result of the truth's shape: ``{}`` or ``[]`` for JSON, else nothing."""
    value = _json(truth)
    return "{}" if isinstance(value, dict) else "[]" if isinstance(value, list) else ""


RULES = DomainRules(mcp_units, mcp_tiers, json_structure, frame_only=mcp_frame_only)

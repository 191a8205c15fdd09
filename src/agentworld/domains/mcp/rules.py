"""MCP's rules: a JSON result is compared field by field, by JSON structure and deterministic fields.

A result becomes ``$.path=value`` leaves; a field whose value the call's arguments or an earlier
result already showed is deterministic. Structure is valid JSON of the truth's type with its keys and
value types. The frame-only prediction is an empty result of the truth's shape.
"""

from __future__ import annotations

import json
from typing import Any

from agentworld.domains.actions import tool_call
from agentworld.domains.content import RUNTIME_KINDS
from agentworld.domains.rules import (
    DomainRules,
    Session,
    Tier,
    clean,
    generic_tiers,
    lines_of,
    ratio,
    runtime_units,
    shape_structure,
)


def _json(text: str) -> Any:
    try:
        return json.loads(clean(text))
    except ValueError:
        return None


def _leaves(value: Any, path: str = "$") -> list[str]:
    """``path=value`` of each scalar; an empty object or list is a leaf too (``$.entities=[]``)."""
    if isinstance(value, dict | list) and not value:
        return [f"{path}={json.dumps(value)}"]
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


def mcp_verdict(units: list[str]) -> list[str]:
    """What a verified MCP result must get right: every JSON leaf (path and value, in any key order)
    or every text line in order, with ids, pids, durations and speeds masked. Times are *not* masked:
    the recorded servers run on a pinned clock (:mod:`agentworld.domains.mcp.frozen_time`, fixed git
    dates), so a time in a result is what the call computed (``convert_time``), not the moment it ran."""
    masked = runtime_units(units, RUNTIME_KINDS - {"TS"})
    return sorted(masked) if units and all(u.startswith("$") and "=" in u for u in units) else masked


RULES = DomainRules(mcp_units, mcp_tiers, json_structure, frame_only=mcp_frame_only, verdict=mcp_verdict)

"""Controls the framework enforces itself: seeded faults, their rendering, and tool-call validation.

Why not leave faults to the model: a training signal needs exact, reproducible rates and typed
kinds (REFERENCE §6), so every decision is drawn from the framework's own RNG (one stream per
rule, seeded from ``(seed, rule index)``) and recorded. The model only *renders* an error when one
is available; without it, the domain's template does (``DomainPlugin.faults``). Calls are validated
against the tool schemas before any model sees them, so invalid-call errors are real ones.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator

from agentworld.domains.spec import ControlSpec, FaultRule, InjectedFault
from agentworld.errors import DataError
from agentworld.sim import toolschema

ERROR_KINDS = frozenset({"timeout", "server_error", "rate_limit", "permission_denied"})
"""Kinds that replace the result with an error; the others transform a real (model) result."""


@dataclass(frozen=True)
class FaultDecision:
    """One recorded decision: which rules the call was eligible for, which fired, which won."""

    call: int
    tool: str | None
    eligible: tuple[int, ...]
    fired: tuple[int, ...]
    fault: InjectedFault | None


def _stream_seed(seed: int, index: int) -> int:
    return int.from_bytes(hashlib.sha256(f"agentworld-fault:{seed}:{index}".encode()).digest()[:8], "big")


class FaultInjector:
    """Decides, per call, whether a fault is injected (exact and reproducible for a seed).

    Every rule counts its own eligible calls (those its ``tools`` filter admits) and, for ``rate``
    rules, draws one number per eligible call from its own stream, whether or not another rule
    wins the call; so adding a rule never shifts another rule's pattern. The first rule that fires
    wins the call.
    """

    def __init__(self, spec: ControlSpec, seed: int) -> None:
        self.spec = spec
        self.seed = spec.seed if spec.seed is not None else seed
        self._rngs = [random.Random(_stream_seed(self.seed, i)) for i in range(len(spec.faults))]
        self._counts = [0] * len(spec.faults)
        self.decisions: list[FaultDecision] = []

    @staticmethod
    def _eligible(rule: FaultRule, tool: str | None) -> bool:
        return not rule.tools or (tool is not None and tool in rule.tools)

    def decide(self, tool: str | None) -> InjectedFault | None:
        """Decide for the next call of ``tool`` (MCP tool name, terminal first word, or ``None``)."""
        eligible, fired = [], []
        for i, rule in enumerate(self.spec.faults):
            if not self._eligible(rule, tool):
                continue
            eligible.append(i)
            self._counts[i] += 1
            n = self._counts[i]
            if rule.rate is not None:
                hit = self._rngs[i].random() < rule.rate
            elif rule.count is not None:
                hit = n <= rule.count
            else:
                hit = n in (rule.schedule or ())
            if hit:
                fired.append(i)
        fault = None
        if fired:
            rule = self.spec.faults[fired[0]]
            fault = InjectedFault(kind=rule.kind, rule=fired[0], tool=tool,
                                  detail={"eligible_call": self._counts[fired[0]], **rule.params})
        self.decisions.append(FaultDecision(call=len(self.decisions) + 1, tool=tool, eligible=tuple(eligible),
                                            fired=tuple(fired), fault=fault))
        return fault

    def idle_rules(self) -> list[FaultRule]:
        """The rules no call so far was eligible for: their ``tools`` were never called.

        A sweep that reports 0 faults for such a rule has not shown the agent is robust to it, so
        episodes say so instead (``no tool this fault applies to``).
        """
        return [rule for rule, count in zip(self.spec.faults, self._counts, strict=True) if count == 0]


# -- rendering -------------------------------------------------------------------------------------

def _describe(fault: InjectedFault) -> str:
    d = fault.detail
    return {
        "timeout": f"the request times out after {d.get('timeout_s', 30)}s without any result",
        "server_error": f"the server fails with HTTP {d.get('status', 503)} "
                        f"{d.get('reason', 'Service Unavailable')}",
        "rate_limit": f"the request is rejected by rate limiting (HTTP 429 Too Many Requests, "
                      f"retry after {d.get('retry_after_s', 2)}s)",
        "permission_denied": "the caller is not permitted to do this (permission denied)",
    }.get(fault.kind, fault.kind)


def fault_request(fault: InjectedFault, domain: str) -> str:
    """The user message asking the world model to render an injected fault realistically."""
    return (f"[Simulation control] This call fails: {_describe(fault)} (fault kind: {fault.kind}). "
            f"Render exactly what the {domain} environment shows the agent for this failure, in the usual "
            "observation format and wrapped in the usual tags. Do not mention that the failure was injected.")


_SHOWS_FAULT = {
    "timeout": re.compile(r"time[d ]?\s?out|timeout|deadline", re.I),
    "server_error": re.compile(r"\b5\d\d\b|server error|internal error|unavailable|bad gateway", re.I),
    "rate_limit": re.compile(r"\b429\b|rate.?limit|too many requests|throttl|quota", re.I),
    "permission_denied": re.compile(r"permission|denied|forbidden|\b403\b|unauthori[sz]ed|not allowed", re.I),
}


def shows_fault(fault: InjectedFault, observation: str) -> bool:
    """Whether a model's rendering of an error fault visibly shows that kind of failure.

    Faults are enforced by the framework: a model that answers an injected failure with a normal
    result would silently cancel it, so such a rendering is replaced by the template.
    """
    pattern = _SHOWS_FAULT.get(fault.kind)
    return pattern is None or bool(pattern.search(observation))


# -- transforms of a real result -------------------------------------------------------------------

def _as_json(text: str) -> Any:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict | list) else None


def _longest_list(obj: dict[str, Any]) -> str | None:
    lists = [(len(v), k) for k, v in obj.items() if isinstance(v, list)]
    return max(lists, key=lambda x: x[0])[1] if lists else None


def _dump(data: Any, like: str) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2 if "\n" in like.strip() else None)


def paginate(text: str, page_size: int, cursor: Callable[[int], str]) -> list[str]:
    """Split a result into pages; page ``k`` (0-based) names ``cursor(k + 1)`` as its ``next_cursor``.

    JSON objects are paged along their longest list (other fields repeated), JSON lists become
    ``{"items": [...], "next_cursor": ...}``, text is paged by lines (the last page has no cursor).
    """
    size = max(1, page_size)
    data = _as_json(text)
    field = _longest_list(data) if isinstance(data, dict) else None
    items: list[Any] = data[field] if field else data if isinstance(data, list) else text.splitlines()
    chunks = [items[i:i + size] for i in range(0, len(items), size)] or [[]]
    pages = []
    for k, chunk in enumerate(chunks):
        nxt = cursor(k + 1) if k + 1 < len(chunks) else None
        if isinstance(data, dict) and field:
            pages.append(_dump({**data, field: chunk, "next_cursor": nxt}, text))
        elif isinstance(data, list):
            pages.append(_dump({"items": chunk, "next_cursor": nxt}, text))
        else:
            pages.append("\n".join(chunk) + (f"\n\nnext_cursor: {nxt}" if nxt else ""))
    return pages


def truncate(text: str, fraction: float) -> tuple[str, dict[str, int]]:
    """Keep a fraction of a result (whole list items or lines, so JSON stays valid): partial data."""
    data = _as_json(text)
    field = _longest_list(data) if isinstance(data, dict) else None
    if isinstance(data, list) or field:
        items = data if isinstance(data, list) else data[field]
        keep = int(len(items) * fraction)
        out = items[:keep] if isinstance(data, list) else {**data, field: items[:keep]}
        return _dump(out, text), {"kept": keep, "of": len(items)}
    lines = text.splitlines()
    if len(lines) > 1:
        keep = max(1, int(len(lines) * fraction))
        return "\n".join(lines[:keep]), {"kept": keep, "of": len(lines)}
    keep = int(len(text) * fraction)
    return text[:keep], {"kept": keep, "of": len(text)}


def transform(fault: InjectedFault, observation: str,
              cursor: Callable[[int], str]) -> tuple[str, dict[str, Any], list[str]]:
    """Apply a pagination, truncation or stale fault to a real result.

    Returns ``(what the agent sees, details for the record, later pages)``; later page ``k`` (1-based)
    is reached with ``cursor(k)``. A fault that would change nothing — one page of a short answer,
    a cut that keeps every item, a stale replay with no earlier answer to replay — returns the
    observation itself, unchanged: it is then not an injected fault (the caller drops it).
    """
    if fault.kind == "pagination":
        pages = paginate(observation, int(fault.detail.get("page_size", 5)), cursor)
        if len(pages) == 1:
            return observation, {}, []
        return pages[0], {"pages": len(pages), "next_cursor": cursor(1)}, pages[1:]
    if fault.kind == "truncated":
        cut, detail = truncate(observation, float(fault.detail.get("keep_fraction", 0.5)))
        if detail["kept"] == detail["of"]:
            return observation, {}, []
        return cut, {"partial": True, **detail}, []
    return observation, {}, []


# -- validation ------------------------------------------------------------------------------------

class ToolValidator:
    """Checks MCP calls against the tools' ``inputSchema`` before any model sees them.

    Schemas may come from a client (the HTTP session API), so they are compiled by
    :func:`agentworld.sim.toolschema.compile_schema`: local references only, patterns on RE2,
    bounded work. A check that may take long runs in a worker thread (:meth:`acheck`), so one
    hostile call never stalls the other sessions of a server.
    """

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self._validators: dict[str, Validator | None] = {}
        self._heavy: set[str] = set()
        for i, tool in enumerate(tools):
            name = tool.get("name")
            if not isinstance(name, str):
                raise DataError("tool has no string 'name'", field=f"tools[{i}].name")
            schema = tool.get("inputSchema")
            if schema is None:
                self._validators[name] = None
                continue
            try:
                self._validators[name] = toolschema.compile_schema(schema)
            except ValueError as exc:
                raise DataError(f"invalid inputSchema of tool {name!r}: {exc}",
                                field=f"tools[{i}].inputSchema") from None
            if toolschema.is_heavy(schema):
                self._heavy.add(name)

    def check(self, name: str, arguments: dict[str, Any]) -> str | None:
        """``None`` when the call is valid, else the error text a server would return."""
        if not self._validators:
            return None
        if name not in self._validators:
            return f"Error: unknown tool {name!r} (available: {', '.join(self._validators)})"
        problem = toolschema.argument_problem(arguments)
        if problem is not None:
            return f"Error: invalid arguments for tool {name!r}: {problem}"
        validator = self._validators[name]
        if validator is None:
            return None
        try:
            errors = toolschema.iter_problems(validator, arguments)
        except toolschema.SchemaTooComplex:
            return f"Error: arguments for tool {name!r} are too complex to check against its inputSchema"
        error = best_match(errors)
        if error is None:
            return None
        return (f"Error: invalid arguments for tool {name!r} at {toolschema.location(error)}: "
                f"{toolschema.message(error)}")

    async def acheck(self, name: str, arguments: dict[str, Any]) -> str | None:
        """:meth:`check`, in a worker thread when the schema or the arguments make it possibly slow."""
        if name in self._heavy or toolschema.json_size(arguments) > _INLINE_CHECK_BYTES:
            return await asyncio.to_thread(self.check, name, arguments)
        return self.check(name, arguments)


_INLINE_CHECK_BYTES = 4096
"""Arguments up to this size under a schema without costly keywords are checked on the event loop."""

"""The MCP ledger: entities earlier tool results returned, and their fields.

A JSON result names entities by id-like fields (``id``, ``order_id``, …); the ledger records each
entity's scalar fields. A later read-only call that shows the same entity must show the same values
unless a mutating call (``update_*``, ``cancel_*``, ``create_*``, … or one whose arguments set the
field) came in between, and a lookup by ``order_id=X`` must return order ``X``. Conflicts are repaired
by restoring the recorded values inside the JSON. Volatile fields (times, counters, tokens) are not
tracked: they may change by themselves.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agentworld.domains.actions import tool_call
from agentworld.domains.ledger import Contradiction, bounded
from agentworld.domains.spec import WorldSpec
from agentworld.schema import strip_marker

Scalar = str | int | float | bool | None
EntityKey = tuple[str, str]
"""``(kind, id)``, e.g. ``("order", "A-17")``."""

MUTATING_VERBS = frozenset(["create", "add", "update", "set", "edit", "modify", "patch", "put", "post",
                            "delete", "remove", "cancel", "change", "assign", "move", "rename", "close",
                            "reopen", "archive", "approve", "reject", "complete", "mark", "toggle",
                            "enable", "disable", "reset", "book", "reserve", "pay", "refund", "send",
                            "submit", "transfer", "upgrade", "downgrade", "exchange", "return", "insert",
                            "write", "upload", "start", "stop", "restart", "merge", "publish", "unpublish",
                            "subscribe", "unsubscribe", "apply", "confirm", "checkout", "purchase", "place",
                            "schedule", "reschedule", "resolve", "lock", "unlock", "increment", "decrement",
                            "clear", "save", "register", "invite", "join", "leave", "like", "follow",
                            "unfollow", "block", "unblock", "execute", "run", "trigger", "deploy", "revoke",
                            "grant", "link", "unlink", "attach", "detach", "upsert", "replace", "modify"])
LIST_VERBS = ("list", "search", "find", "query")
"""Verbs of tools that list entities rather than show one (``list_orders``, ``search_reservations``)."""
_GENERIC = frozenset(["get", "list", "search", "find", "lookup", "fetch", "retrieve", "show", "describe",
                      "read", "view", "query", "details", "detail", "info", "data", "by", "for", "all",
                      "of", "the"])
_VOLATILE = re.compile(r"(?:^|_)(?:time|timestamp|date|datetime|at|updated|modified|last|expires?|expiry|"
                       r"elapsed|uptime|progress|eta|remaining|now|latency|duration|age|ttl|seen|views?|etag|version|"
                       r"cursor|token|next|page|rank|score)(?:$|_)|(?:^|_)(?:count)$", re.I)


@dataclass(frozen=True)
class FieldFix:
    """Set ``field`` of entity ``key`` (or of the top-level object when ``key`` is None) to ``value``."""

    key: EntityKey | None
    field: str
    value: Scalar


def _words(name: str) -> list[str]:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower().replace("-", "_").replace(".", "_").split("_")


def is_mutating(tool: str) -> bool:
    """Whether a tool name says it changes state (``update_order``, ``cancelReservation``).

    >>> is_mutating("cancelReservation"), is_mutating("get_order_details")
    (True, False)
    """
    return any(w in MUTATING_VERBS for w in _words(tool))


def _singular(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _noun(tool: str) -> str:
    words = [w for w in _words(tool) if w and w not in _GENERIC and w not in MUTATING_VERBS]
    return _singular(words[-1]) if words else "item"


def tool_noun(tool: str) -> str:
    """The entity kind a tool's result is about (``get_reservation_details`` → ``reservation``)."""
    return _noun(tool)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _identity(obj: dict[str, Any], kind: str) -> tuple[str, EntityKey] | None:
    """The id field of an object and its entity key; ``id`` first, then ``<kind>_id``, then any ``*_id``."""
    if "id" in obj and _scalar(obj["id"]) and obj["id"] is not None:
        return "id", (kind, str(obj["id"]))
    ids = [k for k, v in obj.items() if k.endswith("_id") and _scalar(v) and v is not None]
    own = [k for k in ids if _singular(k[:-3]) == kind]
    if not ids:
        return None
    name = (own or ids)[0]
    return name, (_singular(name[:-3]), str(obj[name]))


def entities(doc: Any, kind: str) -> list[tuple[EntityKey, dict[str, Any]]]:
    """Every identified object in a JSON document, with its key (depth-first, in document order)."""
    out: list[tuple[EntityKey, dict[str, Any]]] = []
    if isinstance(doc, list):
        for item in doc:
            out += entities(item, kind)
    elif isinstance(doc, dict):
        found = _identity(doc, kind)
        if found:
            out.append((found[1], doc))
        for k, v in doc.items():
            if isinstance(v, dict | list):
                out += entities(v, _singular(k.lower()))
    return out


def parse_json(observation: str) -> tuple[Any, int, int] | None:
    """The first JSON object or array in the observation, and its span."""
    text = observation
    for start in (i for i, ch in enumerate(text) if ch in "{["):
        try:
            doc, end = json.JSONDecoder().raw_decode(text[start:])
        except ValueError:
            continue
        if isinstance(doc, dict | list):
            return doc, start, start + end
    return None


def _tracked(fields: dict[str, Any]) -> dict[str, Scalar]:
    return {k: v for k, v in fields.items() if _scalar(v) and not _VOLATILE.search(k)}


class McpLedger:
    """The :class:`~agentworld.domains.ledger.Ledger` of MCP tool sessions (see the module docstring)."""

    def __init__(self) -> None:
        self.known: dict[EntityKey, dict[str, Scalar]] = {}

    def summary(self) -> str:
        lines = []
        for (kind, ident), fields in self.known.items():
            shown = ", ".join(f"{k}={v!r}" for k, v in list(fields.items())[:6] if not k.endswith("id"))
            lines.append(f"{kind} {ident}: {shown}" if shown else f"{kind} {ident}")
        return bounded(["known entities (unchanged unless a call changed them):", *lines]) if lines else ""

    def check(self, action: str, observation: str) -> list[Contradiction]:
        return [c for c, _ in self._analyse(action, observation)]

    def repair(self, action: str, observation: str, found: list[Contradiction]) -> str | None:
        text = strip_marker(observation)
        fixes = [fix for c, fix in self._analyse(action, text) if c in found]
        parsed = parse_json(text)
        if not fixes or parsed is None:
            return None
        doc, start, end = parsed
        kind = _noun((tool_call(action) or ("item", {}))[0])
        for fix in fixes:
            targets = [doc] if fix.key is None else [o for key, o in entities(doc, kind) if key == fix.key]
            for obj in targets:
                if isinstance(obj, dict):
                    obj[fix.field] = fix.value
        span = text[start:end]
        dumped = json.dumps(doc, ensure_ascii=False, indent=2 if "\n" in span else None)
        return text[:start] + dumped + text[end:]

    def update(self, action: str, observation: str) -> None:
        call = tool_call(action)
        if call is None:
            return
        name, args = call
        if is_mutating(name):
            self._forget(args)
        parsed = parse_json(strip_marker(observation))
        if parsed is None or _is_error(observation):
            return
        for key, obj in entities(parsed[0], _noun(name)):
            self.known.setdefault(key, {}).update(_tracked(obj))

    # -- internals ------------------------------------------------------------------------------------

    def _forget(self, args: dict[str, Any]) -> None:
        """A mutating call: forget the entities its arguments name (all of them if it names none)."""
        named = {str(v) for v in _leaves(args)}
        hit = [key for key in self.known if key[1] in named]
        if not hit:
            self.known.clear()
            return
        ids = {key[1] for key in hit}
        for key in list(self.known):
            if key in hit or any(str(v) in ids for v in self.known[key].values()):
                del self.known[key]

    def _analyse(self, action: str, observation: str) -> list[tuple[Contradiction, FieldFix]]:
        call = tool_call(action)
        text = strip_marker(observation)
        parsed = parse_json(text)
        if call is None or parsed is None or is_mutating(call[0]) or _is_error(text):
            return []
        name, args = call
        doc, kind = parsed[0], _noun(name)
        out = self._asked_ids(name, args, doc, kind)
        pairs = entities(doc, kind)
        for _, fix in out:
            asked = (_singular(fix.field[:-3]) if fix.field.endswith("_id") else kind, str(fix.value))
            pairs = [(k, o) for k, o in pairs if o is not doc] + [(asked, doc)]
        for key, obj in pairs:
            for field, old in self.known.get(key, {}).items():
                if field in obj and _scalar(obj[field]) and obj[field] != old and field not in args:
                    out.append((Contradiction(
                        kind="entity_field", expected=json.dumps(old), found=json.dumps(obj[field]),
                        message=f"{key[0]} {key[1]} had {field}={json.dumps(old)} earlier in this session "
                                f"and no call since changed it, but this result shows "
                                f"{field}={json.dumps(obj[field])}"),
                        FieldFix(None if obj is doc else key, field, old)))
        return out

    @staticmethod
    def _asked_ids(name: str, args: dict[str, Any], doc: Any,
                   kind: str) -> list[tuple[Contradiction, FieldFix]]:
        """A lookup by ``order_id=X`` must return order X (the top-level object of the result)."""
        if not isinstance(doc, dict):
            return []
        out = []
        for arg, value in args.items():
            if not (arg.endswith("_id") or arg == "id") or not _scalar(value) or isinstance(value, bool):
                continue
            field = arg if arg in doc else ("id" if "id" in doc and arg in ("id", f"{kind}_id") else None)
            if field and _scalar(doc[field]) and str(doc[field]) != str(value):
                out.append((Contradiction(
                    kind="entity_id", expected=str(value), found=str(doc[field]),
                    message=f"{name} was called with {arg}={json.dumps(value)} but the result shows "
                            f"{field}={json.dumps(doc[field])}"), FieldFix(None, field, value)))
        return out


def _leaves(value: Any) -> list[Scalar]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [value] if _scalar(value) else []




def _is_error(text: str) -> bool:
    return bool(re.match(r"\s*(?:Error\b|error:|\{\s*\"(?:error|isError)\")", text))


def open_ledger(spec: WorldSpec | None = None) -> McpLedger:
    """The ledger of a new episode: it knows the entities of a JSON initial state (a world folder's), if any.

    Other entities come from tool results.
    """
    ledger = McpLedger()
    parsed = parse_json(spec.initial_state) if spec is not None and spec.initial_state else None
    if parsed is not None:
        for key, obj in entities(parsed[0], "item"):
            ledger.known.setdefault(key, {}).update(_tracked(obj))
    return ledger

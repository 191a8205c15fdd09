"""``world-state``: an offline world model that answers an entity world's tool calls from its state.

Why: a synthesized world holds its data as entities (``world.json``'s ``initial_state``), but offline
nothing answered a call from them: the template generator's worlds could not have their reference
plans run in the simulator, and an agent trained in them saw invented text. This backend reads the
initial entities from the simulator's system prompt, replays the episode's earlier calls (those that
were not answered with an error: a fault or a refused call changed nothing) and answers the current
call by rules a tool's name states:

* a read of an entity (an ``*_id`` argument naming one) shows it; a read without one lists the
  entities of the tool's noun whose fields match every argument (``list_reservations(user_id=U)``);
* a write changes the entity its ``*_id`` names: a status verb sets ``status`` (``cancel_`` →
  ``cancelled``), every other argument sets its field; ``delete_``/``remove_`` removes it;
  ``create_``/``add_``/``book_`` makes a new one from the arguments; the result shows the entity.

It is a rule-based simulator, the "state ledger" baseline of a learned world model, and the harness
that lets ``synth envs`` check reference plans offline. It invents nothing a name does not say (a
fee, a refund amount): worlds whose tools need that need a real world model.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from agentworld.domains.actions import tool_call
from agentworld.domains.mcp.ledger import LIST_VERBS, is_mutating, parse_json, tool_noun
from agentworld.models.base import ChatRequest, ChatResult, register_backend
from agentworld.models.scripted import ScriptedBackend
from agentworld.schema import strip_marker

NAME = "world-state"
Entities = dict[str, dict[str, dict[str, Any]]]

STATUS_VERBS = {"cancel": "cancelled", "close": "closed", "approve": "approved", "reject": "rejected",
                "complete": "completed", "archive": "archived", "confirm": "confirmed", "reopen": "open",
                "lock": "locked", "unlock": "unlocked", "enable": "enabled", "disable": "disabled",
                "refund": "refunded", "pay": "paid", "suspend": "suspended", "activate": "active",
                "resolve": "resolved", "block": "blocked", "unblock": "active", "publish": "published",
                "unpublish": "draft", "escalate": "escalated", "ship": "shipped", "hold": "on_hold"}
"""What a status verb at the start of a write tool's name sets an entity's ``status`` to."""
DELETE_VERBS = frozenset({"delete", "remove", "destroy", "drop"})
CREATE_VERBS = frozenset({"create", "add", "book", "register", "open", "new", "insert", "place"})
LIST_WORDS = frozenset({*LIST_VERBS, "all"})
_TAG = re.compile(r"</?[a-z_]+>")


def _words(tool: str) -> list[str]:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", tool).lower().replace("-", "_").split("_")


def plural(kind: str) -> str:
    """``reservation`` → ``reservations``, ``policy`` → ``policies``."""
    return kind[:-1] + "ies" if kind.endswith("y") and kind[-2:-1] not in "aeiou" else kind + "s"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().lower() == b.strip().lower()
    return bool(a == b) or str(a) == str(b)


def _id_args(arguments: dict[str, Any]) -> list[tuple[str, str]]:
    return [(k, str(v)) for k, v in arguments.items()
            if (k == "id" or k.endswith("_id")) and isinstance(v, str | int) and not isinstance(v, bool)]


def _kind_of(state: Entities, noun: str) -> str:
    if noun in state:
        return noun
    return next((k for k in state if k.rstrip("s") == noun.rstrip("s")), noun)


def _find(state: Entities, key: str, ident: str, noun: str) -> tuple[str, str] | None:
    hint = key[:-3] if key.endswith("_id") else noun
    for kind in (_kind_of(state, hint), _kind_of(state, noun)):
        if ident in state.get(kind, {}):
            return kind, ident
    owners = [kind for kind, items in state.items() if ident in items]
    return (owners[0], ident) if len(owners) == 1 else None


def _shown(kind: str, ident: str, fields: dict[str, Any]) -> dict[str, Any]:
    key = f"{kind}_id"
    return {key: ident, **{k: v for k, v in fields.items() if k != key}}


def apply_call(state: Entities, tool: str, arguments: dict[str, Any]) -> str:
    """Answer one call from ``state`` and apply what it changes there (see the module docstring)."""
    noun = _kind_of(state, tool_noun(tool))
    words = _words(tool)
    ids = _id_args(arguments)
    found = [hit for key, ident in ids if (hit := _find(state, key, ident, noun))]
    own = next((hit for hit in found if hit[0] == noun), None)
    missing = [f"{key.removesuffix('_id') or noun} {ident}" for key, ident in ids
               if _find(state, key, ident, noun) is None]
    if not is_mutating(tool):
        if own is not None and not (LIST_WORDS & set(words)):
            return json.dumps(_shown(*own, state[own[0]][own[1]]), ensure_ascii=False)
        if missing:
            return f"Error: {missing[0]} not found"
        listed = [_shown(noun, ident, fields) for ident, fields in state.get(noun, {}).items()
                  if all(_same(fields.get(k, ident if k in ("id", f"{noun}_id") else None), v)
                         for k, v in arguments.items() if not isinstance(v, dict | list))]
        return json.dumps({plural(noun): listed}, ensure_ascii=False)
    verb = next((w for w in words if is_mutating(w)), words[0])
    if verb in CREATE_VERBS and own is None:
        if missing and any(k != f"{noun}_id" for k, _ in ids):
            return f"Error: {missing[0]} not found"
        items = state.setdefault(noun, {})
        ident = str(arguments.get(f"{noun}_id") or f"{noun[:3].upper()}{len(items) + 1:03d}")
        while ident in items:
            ident += "X"
        items[ident] = {k: copy.deepcopy(v) for k, v in arguments.items() if k != f"{noun}_id"}
        return json.dumps(_shown(noun, ident, items[ident]), ensure_ascii=False)
    target = own or (found[0] if found else None)
    if target is None:
        return f"Error: {missing[0] if missing else noun + ' id'} not found"
    kind, ident = target
    if verb in DELETE_VERBS:
        del state[kind][ident]
        return f"Deleted {kind} {ident}."
    fields = state[kind][ident]
    if verb in STATUS_VERBS:
        fields["status"] = STATUS_VERBS[verb]
    for key, value in arguments.items():
        if key not in ("id", f"{kind}_id"):
            fields[key] = copy.deepcopy(value)
    return json.dumps(_shown(kind, ident, fields), ensure_ascii=False)


def initial_entities(system: str) -> Entities:
    """The entities the system prompt's ``# Initial state`` section lists (``render_entities``' form)."""
    head = system.find("# Initial state")
    parsed = parse_json(system[head:]) if head >= 0 else None
    doc = parsed[0] if parsed else {}
    state: Entities = {}
    if isinstance(doc, dict):
        for kind, items in doc.items():
            for item in items if isinstance(items, list) else []:
                if isinstance(item, dict) and "id" in item:
                    state.setdefault(kind, {})[str(item["id"])] = {k: v for k, v in item.items() if k != "id"}
    return state


def _is_error(observation: str) -> bool:
    text = strip_marker(_TAG.sub("", observation)).lstrip()[:200].lower()
    return text.startswith(("error", '{"error"')) or '"iserror": true' in text


def answer(request: ChatRequest) -> str:
    """The observation of the request's last action, given its system prompt and earlier turns."""
    messages = request.messages
    state = initial_entities(messages[0].content if messages and messages[0].role == "system" else "")
    turns = list(messages[1:])
    asked = [i for i, m in enumerate(turns) if m.role == "user" and tool_call(m.content)]
    if not asked:
        return "Error: no tool call to answer"
    last = asked[-1]
    for i, message in enumerate(turns[:last]):
        call = tool_call(message.content) if message.role == "user" else None
        reply = turns[i + 1].content if i + 1 < len(turns) and turns[i + 1].role == "assistant" else ""
        if call is not None and not _is_error(reply):
            apply_call(state, *call)
    call = tool_call(turns[last].content)
    assert call is not None
    return apply_call(state, *call)


@register_backend(NAME)
def world_state_backend(**_: Any) -> ScriptedBackend:
    """The rule-based world model of entity worlds (``--model world-state``)."""

    def reply(request: ChatRequest) -> ChatResult:
        return ChatResult(content=answer(request), source=NAME, model=NAME)

    return ScriptedBackend(default=reply, name=NAME)

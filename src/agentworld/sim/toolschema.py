"""Tool schemas from untrusted sources: checked once, applied with bounded work, nothing ever fetched.

Why: the HTTP session API takes whole world specs, tool schemas included, from its clients, and
the MCP server applies its tools file to arguments sent by any client. jsonschema used plainly
follows a remote ``$ref`` (the server fetched any URL it was given and echoed the answer in error
messages) and checks ``pattern`` with Python's backtracking ``re``, whose time doubles with every
character on patterns such as ``^(a+)+$``. Here:

* **references** resolve only inside the schema (``#``, ``#/json/pointer``, ``#anchor``): the
  validator's registry has no retrieval, and a schema with any other reference is refused when
  it is loaded, as is one whose local reference points nowhere;
* **regular expressions** (``pattern``, ``patternProperties`` and the ``additionalProperties``
  that depends on them) run on RE2, whose time is linear in the input; a pattern RE2 cannot run
  (back-references, look-around) is refused at load. Python's ``re`` never sees a client pattern;
* **work** is bounded: schema and argument size and depth, ``uniqueItems`` by hashing instead of
  pairwise comparison, and a budget of keyword evaluations per check (deterministic), with a
  wall-clock stop as a safety net. Callers on an event loop run heavy checks in a thread
  (:meth:`agentworld.sim.controls.ToolValidator.acheck`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import orjson
from jsonschema import (
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
)
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.exceptions import Unresolvable

from agentworld.sim.schema_keywords import (
    MESSAGE_CHARS,
    SchemaTooComplex,
    as_json,
    budget,
    compile_pattern,
    cut,
    json_words,
    safe_class,
)

__all__ = ["MAX_DEPTH", "MAX_SCHEMA_BYTES", "SchemaTooComplex", "argument_problem", "compile_pattern",
           "compile_schema", "is_heavy", "iter_problems", "json_size", "location", "message"]

MAX_SCHEMA_BYTES = 65_536
"""Largest ``inputSchema`` of one tool, as JSON."""
MAX_DEPTH = 32
"""Deepest nesting of objects and arrays in a schema or in arguments."""
MAX_KEYWORD_EVALUATIONS = 50_000
"""Keyword evaluations one argument check may take (tens for a typical tool call; about three per
item of a long array of patterned strings)."""
MAX_CHECK_SECONDS = 1.0
"""Wall-clock stop of one check (a safety net; the evaluation budget normally stops it first)."""

_DRAFTS: tuple[type[Validator], ...] = (Draft202012Validator, Draft201909Validator, Draft7Validator,
                                        Draft6Validator, Draft4Validator)
_REFERENCE_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")
_DATA_KEYS = frozenset({"enum", "const", "default", "examples"})
_HEAVY_KEYS = frozenset({"pattern", "patternProperties", "$ref", "$dynamicRef", "$recursiveRef",
                         "uniqueItems", "anyOf", "oneOf", "allOf", "not", "if", "contains",
                         "unevaluatedProperties", "unevaluatedItems", "dependentSchemas", "propertyNames"})


def _uri_key(uri: str) -> str:
    return uri.split("://", 1)[-1].rstrip("#").rstrip("/")


def _meta_uri(cls: type[Validator]) -> str:
    return str(cls.META_SCHEMA.get("$id") or cls.META_SCHEMA.get("id"))


_BY_META_URI = {_uri_key(_meta_uri(cls)): cls for cls in _DRAFTS}


# -- loading ---------------------------------------------------------------------------------------

def compile_schema(schema: Any) -> Validator:
    """A validator for ``schema`` that never fetches, runs patterns on RE2 and counts its work.

    Compiled validators are cached by the schema's canonical JSON: checking a schema against its
    meta-schema takes milliseconds, and an RL loop opens thousands of sessions with the same tools.

    Raises:
        ValueError: the schema is too large or deep, not a valid JSON Schema, refers outside
            itself or to nothing, or has a pattern RE2 cannot run; the message says which.
    """
    if not isinstance(schema, dict | bool):
        raise ValueError(f"a schema must be an object, got {type(schema).__name__}")
    if _depth(schema) > MAX_DEPTH:
        raise ValueError(f"schema nests deeper than {MAX_DEPTH} levels")
    text = _dumps(schema, sort_keys=True)
    if len(text) > MAX_SCHEMA_BYTES:
        raise ValueError(f"schema is {len(text)} bytes of JSON, over the {MAX_SCHEMA_BYTES}-byte limit")
    with _CACHE_LOCK:
        cached = _CACHE.get(text)
        if cached is not None:
            _CACHE.move_to_end(text)
            return cached
    validator = _compile(schema)
    with _CACHE_LOCK:
        _CACHE[text] = validator
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return validator


_CACHE: OrderedDict[bytes, Validator] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 256


def _compile(schema: Any) -> Validator:
    base = _draft(schema)
    _walk(schema, schema)
    if _uses(schema, "unevaluatedProperties") and _uses(schema, "patternProperties"):
        # jsonschema applies the property patterns of unevaluatedProperties with Python's re.
        raise ValueError("unevaluatedProperties together with patternProperties is not supported")
    try:
        base.check_schema(schema, format_checker=None)
    except SchemaError as exc:
        raise ValueError(cut(json_words(exc))) from None
    return safe_class(base)(schema, registry=Registry())


def _draft(schema: Any) -> type[Validator]:
    declared = schema.get("$schema") if isinstance(schema, dict) else None
    if declared is None:
        return Draft202012Validator
    cls = _BY_META_URI.get(_uri_key(declared)) if isinstance(declared, str) else None
    if cls is None:
        known = ", ".join(sorted(_meta_uri(c) for c in _DRAFTS))
        raise ValueError(f"unsupported $schema {cut(repr(declared))}; known: {known}")
    return cls


def _walk(node: Any, root: Any, depth: int = 0, at_root: bool = True) -> None:
    """Refuse what a schema may not contain: remote or dangling references, nested ``$id``, bad patterns."""
    if depth > MAX_DEPTH:
        raise ValueError(f"schema nests deeper than {MAX_DEPTH} levels")
    if isinstance(node, list):
        for item in node:
            _walk(item, root, depth + 1, False)
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if key in _DATA_KEYS:
            continue
        if key in _REFERENCE_KEYS and isinstance(value, str):
            _check_reference(value, root)
        elif key in ("$id", "id") and isinstance(value, str) and not at_root:
            raise ValueError(f"nested {key} {cut(repr(value))} is not supported (one document per tool)")
        elif key == "pattern" and isinstance(value, str):
            compile_pattern(value)
        elif key == "patternProperties" and isinstance(value, dict):
            for pattern in value:
                compile_pattern(pattern)
        _walk(value, root, depth + 1, False)


def _check_reference(ref: str, root: Any) -> None:
    if not ref.startswith("#"):
        raise ValueError(f"reference {cut(repr(ref))} points outside the schema: only local references "
                         "(#, #/$defs/…, #anchor) are resolved, nothing is fetched")
    fragment = ref[1:]
    if fragment and not fragment.startswith("/"):
        if not _has_anchor(root, fragment):
            raise ValueError(f"reference {cut(repr(ref))}: no $anchor {fragment!r} in the schema")
        return
    node = root
    for raw in fragment.split("/")[1:]:
        part = _unquote(raw)
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise ValueError(f"reference {cut(repr(ref))} points to nothing in the schema")
    if not isinstance(node, dict | bool):
        raise ValueError(f"reference {cut(repr(ref))} does not point to a schema")


def _unquote(part: str) -> str:
    from urllib.parse import unquote

    return unquote(part).replace("~1", "/").replace("~0", "~")


def _has_anchor(node: Any, name: str) -> bool:
    if isinstance(node, list):
        return any(_has_anchor(item, name) for item in node)
    if not isinstance(node, dict):
        return False
    if node.get("$anchor") == name or node.get("$dynamicAnchor") == name:
        return True
    return any(_has_anchor(v, name) for k, v in node.items() if k not in _DATA_KEYS)


def _uses(node: Any, keyword: str) -> bool:
    if isinstance(node, list):
        return any(_uses(item, keyword) for item in node)
    if not isinstance(node, dict):
        return False
    return keyword in node or any(_uses(v, keyword) for k, v in node.items() if k not in _DATA_KEYS)


def is_heavy(schema: Any) -> bool:
    """Whether checking against ``schema`` may take long enough to belong off the event loop."""
    if isinstance(schema, list):
        return any(is_heavy(item) for item in schema)
    if not isinstance(schema, dict):
        return False
    return any(k in _HEAVY_KEYS or (k not in _DATA_KEYS and is_heavy(v)) for k, v in schema.items())


# -- checking --------------------------------------------------------------------------------------

def argument_problem(arguments: Any, max_bytes: int | None = None) -> str | None:
    """Why ``arguments`` are refused before any schema is applied (too deep or too large), or None."""
    depth = _depth(arguments)
    if depth > MAX_DEPTH:
        return f"arguments nest deeper than {MAX_DEPTH} levels"
    if max_bytes is not None:
        size = len(_dumps(arguments))
        if size > max_bytes:
            return f"arguments are {size} bytes of JSON, over the {max_bytes}-byte limit"
    return None


def json_size(value: Any) -> int:
    """Length of ``value`` as compact JSON, in bytes."""
    return len(_dumps(value))


def iter_problems(validator: Validator, arguments: Any) -> list[ValidationError]:
    """Every error of ``arguments`` under ``validator`` (sorted by path), with bounded work.

    Raises:
        SchemaTooComplex: the check ran out of its evaluation budget or time.
    """
    try:
        with budget(MAX_KEYWORD_EVALUATIONS, MAX_CHECK_SECONDS):
            return sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path])
    except (RecursionError, Unresolvable) as exc:
        raise SchemaTooComplex from exc


def message(error: ValidationError) -> str:
    """An error's message in JSON words, short: the offending value it quotes is elided in the middle
    when long."""
    text = json_words(error)
    if len(text) > MESSAGE_CHARS:
        shown = as_json(error.instance)
        shown = shown if text.startswith(shown) else repr(error.instance)
        if len(shown) > 80 and shown in text:
            text = text.replace(shown, f"{shown[:60]}…{shown[-12:]}")
    return cut(text)


def location(error: ValidationError) -> str:
    """``arguments.user_id``, ``arguments.items[2]``: where in the arguments an error is."""
    return "arguments" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return deepest


def _dumps(value: Any, sort_keys: bool = False) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS if sort_keys else None)
    except TypeError:  # integers beyond 64 bits, which JSON allows
        import json

        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys,
                          default=repr).encode()

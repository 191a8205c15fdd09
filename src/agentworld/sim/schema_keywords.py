"""The keywords of a tool-schema validator that runs client patterns safely and counts its work.

:func:`safe_class` extends a jsonschema draft validator: ``pattern``, ``patternProperties`` and
``additionalProperties`` (which applies the property patterns) on RE2 instead of Python's
backtracking ``re``; ``uniqueItems`` by hashing instead of pairwise comparison; and every keyword
counted against the budget of the check in progress (:func:`budget`), so a schema built to make
validation explode (nested ``anyOf`` behind ``$ref``, say) stops with :class:`SchemaTooComplex`.
:mod:`agentworld.sim.toolschema` is the public side.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import math
import time
from collections.abc import Callable, Iterator
from typing import Any

import re2
from jsonschema import validators
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator

MESSAGE_CHARS = 300
"""Messages quote patterns and values; longer ones are cut."""


class SchemaTooComplex(Exception):
    """A check ran out of its evaluation budget or time."""


def cut(text: str) -> str:
    """``text``, cut to :data:`MESSAGE_CHARS`."""
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS - 1] + "…"


def json_words(error: ValidationError | SchemaError) -> str:
    """jsonschema's message with the offending value written as JSON: ``null is not of type 'integer'``,
    not ``None …`` (jsonschema quotes values with Python's ``repr``; the user wrote JSON). Strings keep
    their quotes, as the schema's own words (``'integer'``) do."""
    text = error.message
    if not isinstance(error.instance, str) and text.startswith(repr(error.instance)):
        text = as_json(error.instance) + text[len(repr(error.instance)):]
    expected = error.validator_value
    if isinstance(expected, list | dict) and repr(expected) in text:  # enum: ['x', None]
        text = text.replace(repr(expected), as_json(expected))
    elif error.validator == "const" and not isinstance(expected, str) and text.startswith(repr(expected)):
        text = as_json(expected) + text[len(repr(expected)):]
    return text


def as_json(value: Any) -> str:
    """``value`` as JSON text (``repr`` for what JSON cannot say)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


@functools.lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> Any:
    """RE2 program of an ECMA-262-style pattern (cached).

    Raises:
        ValueError: RE2 cannot run it (back-references, look-around, …), with RE2's reason.
    """
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(f"pattern {cut(repr(pattern))} is not supported (linear-time regular expressions "
                         f"only: no back-references or look-around): {reason}") from None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not compile_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any,
                        schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        regex = compile_pattern(pattern)
        for key, value in instance.items():
            if regex.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any,
                           schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    known = schema.get("properties", {})
    regexes = [compile_pattern(p) for p in schema.get("patternProperties", {})]
    extras = sorted((k for k in instance if k not in known and not any(r.search(k) for r in regexes)),
                    key=str)
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        names = ", ".join(repr(e) for e in extras)
        if regexes:
            patterns = ", ".join(repr(p) for p in sorted(schema["patternProperties"]))
            yield ValidationError(f"{names} {'does' if len(extras) == 1 else 'do'} not match any of the "
                                  f"regexes: {patterns}")
        else:
            yield ValidationError(f"Additional properties are not allowed ({names} "
                                  f"{'was' if len(extras) == 1 else 'were'} unexpected)")


def _canonical(value: Any) -> Any:
    """A hashable form equal exactly when JSON Schema calls two values equal (``1 == 1.0``, ``true != 1``)."""
    if isinstance(value, bool) or value is None:
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", int(value) if isinstance(value, float) and math.isfinite(value) and value.is_integer()
                else value)
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, list):
        return ("l", tuple(_canonical(v) for v in value))
    if isinstance(value, dict):
        return ("d", frozenset((k, _canonical(v)) for k, v in value.items()))
    return ("o", repr(value))


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if unique and validator.is_type(instance, "array"):
        seen: set[Any] = set()
        for item in instance:
            key = _canonical(item)
            if key in seen:
                yield ValidationError(f"{instance!r} has non-unique elements")
                return
            seen.add(key)


# -- budget ----------------------------------------------------------------------------------------

class _Budget:
    def __init__(self, evaluations: int, seconds: float) -> None:
        self.left = evaluations
        self.deadline = time.monotonic() + seconds

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0 or (self.left % 256 == 0 and time.monotonic() > self.deadline):
            raise SchemaTooComplex


_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("agentworld_schema_budget",
                                                                        default=None)


@contextlib.contextmanager
def budget(evaluations: int, seconds: float) -> Iterator[None]:
    """Count the keyword evaluations of checks in this block (this thread/task) against a budget.

    Raises:
        SchemaTooComplex: more than ``evaluations`` evaluations, or ``seconds`` passed.
    """
    token = _BUDGET.set(_Budget(evaluations, seconds))
    try:
        yield
    finally:
        _BUDGET.reset(token)


def _counted(keyword: Callable[..., Any]) -> Callable[..., Any]:
    def counted(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        budget = _BUDGET.get()
        if budget is not None:
            budget.spend()
        return keyword(validator, value, instance, schema)

    return counted


_OVERRIDES: dict[str, Callable[..., Any]] = {"pattern": _pattern, "patternProperties": _pattern_properties,
                                             "additionalProperties": _additional_properties,
                                             "uniqueItems": _unique_items}


_SAFE_CLASSES: dict[str, type[Validator]] = {}


def safe_class(base: type[Validator]) -> type[Validator]:
    """``base`` with RE2 pattern keywords, hashed ``uniqueItems`` and every keyword counted."""
    safe = _SAFE_CLASSES.get(base.__name__)
    if safe is None:
        keywords = {name: _counted(_OVERRIDES.get(name, fn)) for name, fn in base.VALIDATORS.items()}
        safe = _SAFE_CLASSES.setdefault(base.__name__, validators.extend(base, keywords))
    return safe

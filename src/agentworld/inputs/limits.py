"""The limits every reader of an untrusted file applies (sizes, nesting, YAML expansion)."""

from __future__ import annotations

import os

from agentworld.errors import DataError

DEFAULT_MAX_INPUT_BYTES = 64 * 1024 * 1024
"""The size limit of one input file unless :data:`MAX_INPUT_BYTES_ENV` sets another."""
MAX_INPUT_BYTES_ENV = "AGENTWORLD_MAX_INPUT_BYTES"
"""Environment variable that sets the size limit (bytes) of one input file."""
MAX_DEPTH = 200
"""The deepest nesting of JSON/YAML containers accepted (tool schemas and entities need a few dozen)."""
MAX_EXPANSION = 1_000_000
"""How much YAML aliases may add to a document beyond its own text, in nodes plus characters of the
strings they repeat: an alias stands for a copy of what it names in everything that reads the values."""


def max_input_bytes() -> int:
    """The size limit of one input file: ``$AGENTWORLD_MAX_INPUT_BYTES`` or 64 MiB."""
    return env_bytes(MAX_INPUT_BYTES_ENV, DEFAULT_MAX_INPUT_BYTES)


def env_bytes(name: str, default: int) -> int:
    """A positive number of bytes from the environment variable ``name``, ``default`` when unset.

    Raises:
        DataError: the variable is set to something that is not a positive whole number.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise DataError(f"{name}={raw!r}: expected a positive number of bytes")
    return value

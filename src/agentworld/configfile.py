"""Reading typed config files (YAML or JSON) with errors that name the file, line and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agentworld.errors import DataError
from agentworld.inputs import parse_yaml, read_text

M = TypeVar("M", bound=BaseModel)


def load_config_file(cls: type[M], path: str | Path, **overrides: Any) -> M:
    """Validate the mapping in ``path`` (YAML or JSON) as ``cls``; non-None ``overrides`` win.

    Errors are :class:`DataError` with the file, the line of a syntax error, and the dotted field
    of the first validation error (``steps.2.options``). Only a bounded regular file is read, nested
    at most :data:`agentworld.inputs.MAX_DEPTH` deep (:mod:`agentworld.inputs`).
    """
    path = Path(path)
    data = parse_yaml(read_text(path, what="config file"), path=path) or {}
    if not isinstance(data, dict):
        raise DataError("a config file must hold a mapping", path=str(path))
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(map(str, err["loc"])) or None
        raise DataError(err["msg"], path=str(path), field=field) from None

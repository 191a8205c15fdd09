"""One reader for the small JSON-lines files users hand us: scenarios, held-out sets, task lists.

Why: five loaders (MCP, search, SWE and web scenarios; a synthesized world's tasks) each had their
own copy of the same loop — read the file, skip blank lines, parse JSON, validate the item, refuse
a repeated name, refuse an empty file — and their error messages drifted apart. Here the loop is
written once; each loader passes only how one item is validated and what its name is, and every
error names the file, the line, the item and the field (:class:`~agentworld.errors.DataError`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agentworld.errors import DataError
from agentworld.inputs import jsonl_rows, parse_json, read_text

__all__ = ["read_records", "validated"]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


def _items(file: Path, what: str, json_list: bool, max_bytes: int | None,
           root: Path | None) -> list[tuple[int | None, Any]]:
    if not file.exists() and not file.is_symlink():
        raise DataError(f"no such {what} file", path=str(file))
    text = read_text(file, root=root, max_bytes=max_bytes, what=f"{what} file")
    if json_list and file.suffix != ".jsonl":
        data = parse_json(text, path=file)
        if not isinstance(data, list):
            raise DataError(f"expected a JSON list (or a .jsonl file) of {what}s", path=str(file))
        return [(None, item) for item in data]
    return list(jsonl_rows(text, path=file))


def read_records(path: str | Path, parse: Callable[[Any, int | None], T], name: Callable[[T], str], *,
                 what: str = "scenario", key: str = "name", allow_empty: bool = False,
                 json_list: bool = False, max_bytes: int | None = None, root: Path | None = None) -> list[T]:
    """Read a JSON-lines file of named items, each validated by ``parse``; names must be unique.

    Args:
        path: the file; with ``json_list`` a file not ending in ``.jsonl`` may hold one JSON list.
        parse: validates one decoded item given its line (``None`` inside a JSON list) and returns
            the record, raising :class:`DataError` located by path, line, item and field.
        name: the record's unique name (reported as the field ``key`` when repeated).
        what: what an item is called in messages ("scenario", "task").
        allow_empty: whether a file with no items is a valid (empty) answer.
        max_bytes: refuse a larger file before reading it (default
            :func:`agentworld.inputs.max_input_bytes`); only a regular file is read.
        root: when given, the file's real path must lie inside this folder.

    Raises:
        DataError: naming the file, the line, the item and the field.
    """
    file = Path(path)
    out: list[T] = []
    seen: set[str] = set()
    for line, item in _items(file, what, json_list, max_bytes, root):
        record = parse(item, line)
        label = name(record)
        if label in seen:
            raise DataError(f"duplicate {what} {key}", path=str(file), line=line, sample_id=label, field=key)
        seen.add(label)
        out.append(record)
    if not out and not allow_empty:
        raise DataError(f"the {what} file holds no {what}s", path=str(file))
    return out


def validated(model: type[M], item: Any, *, path: str | Path, line: int | None, key: str = "name") -> M:
    """``model`` validated from ``item``; the first error becomes a :class:`DataError` at its field."""
    sample = item.get(key) if isinstance(item, dict) and isinstance(item.get(key), str) else None
    try:
        return model.model_validate(item)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or None
        raise DataError(err["msg"], path=str(path), line=line, field=where, sample_id=sample) from None

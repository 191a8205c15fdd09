"""Reading files a user (or a stranger) hands us: bounded, regular, confined, and JSON that cannot recurse.

Why: world folders, seed files, control specs and ``--docs`` trees come from anywhere, and a
server reads them on a client's say-so (``serve http --worlds-root``). A ``controls/x.yaml`` that
links to ``/dev/zero`` was read without bound, one that is a FIFO hung the reader forever, a
``world.json`` linked to a file outside its folder was served, and JSON nested ten thousand deep
ended in a ``RecursionError`` traceback (or an HTTP 500). So every such read goes through here:

* :func:`read_bytes` / :func:`read_text`: regular files only (checked with ``stat`` before the
  open, and again on the open descriptor, which is opened non-blocking so a FIFO swapped in
  between cannot hang it), at most :func:`max_input_bytes` bytes (64 MiB unless the environment
  variable ``AGENTWORLD_MAX_INPUT_BYTES`` says otherwise), and, given ``root``, nothing whose real
  path leaves ``root`` (a symlink inside the folder to a file inside it is fine);
* :func:`parse_json` / :func:`parse_yaml`: at most :data:`MAX_DEPTH` levels of nesting;
* :func:`jsonl_rows`: the one JSON-lines splitter. It splits on ``"\\n"`` only: ``str.splitlines``
  also splits on U+2028, U+2029 and U+0085, which JSON writers leave raw inside strings, so a
  splitlines reader could not load back what our own writers saved.

Every failure is a :class:`~agentworld.errors.DataError` naming the file (and line).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentworld.errors import DataError

__all__ = ["DEFAULT_MAX_INPUT_BYTES", "MAX_DEPTH", "MAX_INPUT_BYTES_ENV", "check_file", "jsonl_rows",
           "max_input_bytes", "parse_json", "parse_yaml", "read_bytes", "read_jsonl", "read_text"]

DEFAULT_MAX_INPUT_BYTES = 64 * 1024 * 1024
"""The size limit of one input file unless :data:`MAX_INPUT_BYTES_ENV` sets another."""
MAX_INPUT_BYTES_ENV = "AGENTWORLD_MAX_INPUT_BYTES"
"""Environment variable that sets the size limit (bytes) of one input file."""
MAX_DEPTH = 200
"""The deepest nesting of JSON/YAML containers accepted (tool schemas and entities need a few dozen)."""

_KIND = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
         stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory"}


def max_input_bytes() -> int:
    """The size limit of one input file: ``$AGENTWORLD_MAX_INPUT_BYTES`` or 64 MiB."""
    raw = os.environ.get(MAX_INPUT_BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_INPUT_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise DataError(f"{MAX_INPUT_BYTES_ENV}={raw!r}: expected a positive number of bytes")
    return value


def _check_kind(mode: int, path: Path) -> None:
    if not stat.S_ISREG(mode):
        kind = _KIND.get(stat.S_IFMT(mode), "not a regular file")
        raise DataError(f"not a regular file ({kind}); only regular files are read", path=str(path))


def check_file(path: str | Path, *, root: str | Path | None = None, max_bytes: int | None = None,
               what: str = "file") -> Path:
    """``path`` once it is a regular file of at most ``max_bytes``, inside ``root`` when given.

    For files another reader opens itself (a streaming ingest); :func:`read_bytes` checks the same.
    """
    path = Path(path)
    limit = max_input_bytes() if max_bytes is None else max_bytes
    _confine(path, root)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise DataError(f"cannot read the {what}: no such file", path=str(path)) from None
    except OSError as exc:
        raise DataError(f"cannot read: {exc.strerror or exc}", path=str(path)) from None
    _check_kind(info.st_mode, path)
    if info.st_size > limit:
        raise DataError(_too_large(limit), path=str(path))
    return path


def _confine(path: Path, root: str | Path | None) -> None:
    if root is not None and not path.resolve().is_relative_to(Path(root).resolve()):
        raise DataError(f"links outside its folder {Path(root)} (refused)", path=str(path))


def read_bytes(path: str | Path, *, root: str | Path | None = None, max_bytes: int | None = None,
               what: str = "file") -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (default :func:`max_input_bytes`).

    Args:
        path: the file.
        root: when given, the file's real path (links followed) must lie inside ``root``'s.
        max_bytes: the size limit; a larger file is refused before (and while) it is read.
        what: what the file is called in the "missing" message.

    Raises:
        DataError: missing, outside ``root``, not a regular file, too large, or unreadable.
    """
    path = Path(path)
    limit = max_input_bytes() if max_bytes is None else max_bytes
    _confine(path, root)
    try:
        _check_kind(os.stat(path).st_mode, path)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise DataError(f"cannot read the {what}: no such file", path=str(path)) from None
    except OSError as exc:
        raise DataError(f"cannot read: {exc.strerror or exc}", path=str(path)) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        _check_kind(info.st_mode, path)  # swapped between the stat and the open
        if info.st_size > limit:
            raise DataError(_too_large(limit), path=str(path))
        data = handle.read(limit + 1)
    if len(data) > limit:  # grew while being read
        raise DataError(_too_large(limit), path=str(path))
    return data


def _too_large(limit: int) -> str:
    return f"file larger than {limit} bytes (the limit; set {MAX_INPUT_BYTES_ENV} to change it)"


def read_text(path: str | Path, *, root: str | Path | None = None, max_bytes: int | None = None,
              what: str = "file") -> str:
    """:func:`read_bytes` decoded as UTF-8 (a byte-order mark is dropped); bad bytes are a DataError."""
    data = read_bytes(path, root=root, max_bytes=max_bytes, what=what)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text: {exc}", path=str(path)) from None


def _check_depth(data: Any, path: str | None, line: int | None) -> Any:
    """``data`` itself, once no container in it is nested deeper than :data:`MAX_DEPTH` (no recursion)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                raise DataError(f"nested deeper than {MAX_DEPTH} levels", path=path, line=line)
            stack.extend((x, depth + 1) for x in (item.values() if isinstance(item, dict) else item))
    return data


def parse_json(text: str | bytes, *, path: str | Path | None = None, line: int | None = None) -> Any:
    """``json.loads`` that answers bad or too deeply nested JSON with a located DataError."""
    where = str(path) if path is not None else None
    try:
        data = json.loads(text)
    except RecursionError:
        raise DataError(f"nested deeper than {MAX_DEPTH} levels", path=where, line=line) from None
    except json.JSONDecodeError as exc:
        raise DataError(f"malformed JSON: {exc}", path=where,
                        line=line if line is not None else exc.lineno) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise DataError(f"malformed JSON: {exc}", path=where, line=line) from None
    return _check_depth(data, where, line)


def parse_yaml(text: str, *, path: str | Path | None = None) -> Any:
    """``yaml.safe_load`` that answers bad or too deeply nested YAML with a located DataError."""
    import yaml

    where = str(path) if path is not None else None
    try:
        data = yaml.safe_load(text)
    except RecursionError:
        raise DataError(f"nested deeper than {MAX_DEPTH} levels", path=where) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise DataError(f"malformed YAML: {getattr(exc, 'problem', None) or exc}", path=where,
                        line=mark.line + 1 if mark else None) from None
    return _check_depth(data, where, None)


def jsonl_rows(text: str, *, path: str | Path | None = None) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line, split on ``"\\n"`` only (see the module doc)."""
    for number, raw in enumerate(text.split("\n"), 1):
        if raw.strip():
            yield number, parse_json(raw, path=path, line=number)


def read_jsonl(path: str | Path, *, root: str | Path | None = None,
               max_bytes: int | None = None) -> list[tuple[int, Any]]:
    """The rows of a bounded JSON-lines file (:func:`read_text` + :func:`jsonl_rows`)."""
    return list(jsonl_rows(read_text(path, root=root, max_bytes=max_bytes), path=path))

"""Reading files a user (or a stranger) hands us: bounded, regular, confined, and JSON that cannot recurse.

Why: world folders, seed files, control specs and ``--docs`` trees come from anywhere, and a
server reads them on a client's say-so (``serve http --worlds-root``). A ``controls/x.yaml`` that
links to ``/dev/zero`` was read without bound, one that is a FIFO hung the reader forever, a
``world.json`` linked to a file outside its folder was served, and JSON nested ten thousand deep
ended in a ``RecursionError`` traceback (or an HTTP 500). So every such read goes through here:

* :func:`read_bytes` / :func:`read_text` (and :func:`open_file` / :func:`lines` for readers that
  stream a file of any size line by line): regular files only (checked with ``stat`` before the
  open, and again on the open descriptor, which is opened non-blocking so a FIFO swapped in
  between cannot hang it), at most :func:`max_input_bytes` bytes (64 MiB unless the environment
  variable ``AGENTWORLD_MAX_INPUT_BYTES`` says otherwise), and, given ``root``, nothing whose real
  path leaves ``root`` (a symlink inside the folder to a file inside it is fine); a streamed line
  is bounded instead of the file;
* :func:`parse_json` / :func:`parse_yaml`: at most :data:`MAX_DEPTH` levels of nesting, JSON's
  values only (no ``NaN``, ``1e400``, lone surrogates, YAML timestamps or sets), and YAML whose
  aliases cannot make a small file a huge tree (:mod:`agentworld.inputs.yaml_safe`);
* :func:`jsonl_rows`: the one JSON-lines splitter. It splits on ``"\\n"`` only: ``str.splitlines``
  also splits on U+2028, U+2029 and U+0085, which JSON writers leave raw inside strings, so a
  splitlines reader could not load back what our own writers saved.

Every failure is a :class:`~agentworld.errors.DataError` naming the file (and line).
"""

from __future__ import annotations

import itertools
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from agentworld.errors import DataError
from agentworld.inputs.limits import (
    DEFAULT_MAX_INPUT_BYTES,
    MAX_DEPTH,
    MAX_EXPANSION,
    MAX_INPUT_BYTES_ENV,
    max_input_bytes,
)
from agentworld.inputs.yaml_safe import parse_yaml

__all__ = ["DEFAULT_MAX_INPUT_BYTES", "MAX_DEPTH", "MAX_EXPANSION", "MAX_INPUT_BYTES_ENV", "check_file",
           "jsonl_rows", "lines", "max_input_bytes", "open_file", "parse_json", "parse_yaml", "read_bytes",
           "read_jsonl", "read_text"]

_KIND = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
         stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory"}


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


def open_file(path: str | Path, *, root: str | Path | None = None, what: str = "file") -> BinaryIO:
    """A regular file opened for binary reading, for readers that stream it (:func:`lines`).

    Checked as :func:`read_bytes` checks a file (regular, inside ``root``), but not for its size:
    a streaming reader bounds each line instead. The open is non-blocking, so a FIFO swapped in
    after the ``stat`` cannot hang it either.

    Raises:
        DataError: missing, outside ``root``, not a regular file, or unreadable.
    """
    path = Path(path)
    _confine(path, root)
    try:
        _check_kind(os.stat(path).st_mode, path)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise DataError(f"cannot read the {what}: no such file", path=str(path)) from None
    except OSError as exc:
        raise DataError(f"cannot read: {exc.strerror or exc}", path=str(path)) from None
    handle = os.fdopen(fd, "rb")
    try:
        _check_kind(os.fstat(fd).st_mode, path)  # swapped between the stat and the open
    except DataError:
        handle.close()
        raise
    return handle


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
    limit = max_input_bytes() if max_bytes is None else max_bytes
    with open_file(path, root=root, what=what) as handle:
        if os.fstat(handle.fileno()).st_size > limit:
            raise DataError(_too_large(limit), path=str(path))
        data = handle.read(limit + 1)
    if len(data) > limit:  # grew while being read
        raise DataError(_too_large(limit), path=str(path))
    return data


def lines(path: str | Path, *, root: str | Path | None = None, what: str = "file",
          max_line_bytes: int | None = None) -> Iterator[tuple[int, int, bytes]]:
    """``(line number, byte offset, bytes)`` of each non-blank line of a file of any length.

    The JSON-lines readers of data files (rows, trajectories, run journals, corpora) stream through
    this: the file is opened by :func:`open_file`, a byte-order mark before the first line is
    dropped (as :func:`read_text` drops it), lines are split on ``b"\\n"`` only (see the module
    doc), and a line longer than ``max_line_bytes`` (default :func:`max_input_bytes`) is a
    DataError naming the file and line, so a file without newlines cannot fill the memory.
    """
    limit = max_input_bytes() if max_line_bytes is None else max_line_bytes
    with open_file(path, root=root, what=what) as handle:
        offset = 0
        for number in itertools.count(1):
            raw = handle.readline(limit + 1)
            if not raw:
                return
            if len(raw) > limit and not raw.endswith(b"\n"):
                raise DataError(f"a line longer than {limit} bytes (the limit; set {MAX_INPUT_BYTES_ENV} to "
                                "change it)", path=str(path), line=number)
            start, offset = offset, offset + len(raw)
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if not raw.isspace() and raw:
                yield number, start, raw


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
    """``data`` itself, once no container in it is nested deeper than :data:`MAX_DEPTH` (no recursion).

    For parsed JSON, a tree (no container is shared), so the walk is linear in the document.
    """
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                raise DataError(f"nested deeper than {MAX_DEPTH} levels", path=path, line=line)
            stack.extend((x, depth + 1) for x in (item.values() if isinstance(item, dict) else item))
    return data


def parse_json(text: str | bytes, *, path: str | Path | None = None, line: int | None = None) -> Any:
    """Strict JSON (``orjson``) that answers bad or too deeply nested JSON with a located DataError.

    Strict as every other reader here: ``NaN``, ``Infinity``, numbers a double cannot hold
    (``1e400``) and lone surrogates (``"\\ud800"``, which no UTF-8 file can be written with) are
    malformed JSON, not values that fail later, far from the file.
    """
    import orjson

    where = str(path) if path is not None else None
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc) or "recursion" in str(exc):
            raise DataError(f"nested deeper than {MAX_DEPTH} levels", path=where, line=line) from None
        raise DataError(f"malformed JSON: {exc}", path=where,
                        line=line if line is not None else exc.lineno) from None
    return _check_depth(data, where, line)


def jsonl_rows(text: str, *, path: str | Path | None = None) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line, split on ``"\\n"`` only (see the module doc)."""
    for number, raw in enumerate(text.split("\n"), 1):
        if raw.strip():
            yield number, parse_json(raw, path=path, line=number)


def read_jsonl(path: str | Path, *, root: str | Path | None = None,
               max_bytes: int | None = None) -> list[tuple[int, Any]]:
    """The rows of a bounded JSON-lines file (:func:`read_text` + :func:`jsonl_rows`)."""
    return list(jsonl_rows(read_text(path, root=root, max_bytes=max_bytes), path=path))

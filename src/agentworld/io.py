"""Crash-safe file helpers: atomic whole-file writes and append-only JSONL journals.

Every long run in agentworld writes through these, so killing a process at any moment leaves
each output file either as it was or with whole new lines; a torn last line is ignored on read.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson


def dumps(obj: Any) -> str:
    """Serialise to compact JSON text (unicode kept, keys in insertion order)."""
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode()


def loads(text: str | bytes) -> Any:
    return orjson.loads(text)


def atomic_write_lines(path: str | Path, lines: Iterable[str]) -> int:
    """Stream ``lines`` into ``path`` so readers never see a partial file; returns the line count.

    The lines go to a temporary file beside ``path`` (so memory stays flat however many there
    are), which is fsynced and renamed over ``path`` at the end; on any error it is removed and
    ``path`` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    count = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for line in lines:
                handle.write(line)
                count += 1
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600 files; outputs are ordinary files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` so readers never see a partial file (tmp file + fsync + rename)."""
    atomic_write_lines(path, [text])


def atomic_write_jsonl(path: str | Path, rows: Iterable[Any]) -> int:
    """Stream JSON rows into ``path`` atomically (see :func:`atomic_write_lines`); returns the count."""
    return atomic_write_lines(path, (dumps(row) + "\n" for row in rows))


class JsonlJournal:
    """Append-only JSONL file: one ``append`` is one whole line, flushed and fsynced.

    Used for results of long runs; a process killed mid-write leaves at most one torn final
    line, which :func:`read_journal` skips (and the next append starts on a fresh line).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair_tail()
        self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115

    def _repair_tail(self) -> None:
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with open(self.path, "rb+") as handle:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                data = self.path.read_bytes()
                cut = data.rfind(b"\n") + 1
                handle.truncate(cut)

    def append(self, row: Any) -> None:
        self._handle.write(dumps(row) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> JsonlJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_journal(path: str | Path) -> Iterator[Any]:
    """Yield the complete JSON lines of a journal; a torn last line is skipped."""
    path = Path(path)
    if not path.exists():
        return
    with open(path, "rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n"):
                break
            raw = raw.strip()
            if not raw:
                continue
            try:
                yield orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue

"""Crash-safe file helpers: atomic whole-file writes and append-only JSONL journals.

Every long run in agentworld writes through these, so killing a process at any moment leaves
each output file either as it was or with whole new lines; a torn last line is ignored on read
and set aside (never silently lost) when the journal is opened again.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from agentworld.errors import DiskFullError

log = logging.getLogger(__name__)
PREVIEW_CHARS = 80
"""How much of a dropped journal tail the warning shows."""


FULL = (errno.ENOSPC, errno.EDQUOT)
"""The write errors that mean "no room": the run's error (:class:`DiskFullError`), not a sample's."""


@contextlib.contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """Turn a full disk or quota while writing ``path`` into :class:`DiskFullError` naming it."""
    try:
        yield
    except OSError as exc:
        if exc.errno in FULL:
            raise DiskFullError(path) from None
        raise


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
    return atomic_write_chunks(path, (line.encode() for line in lines))


def atomic_write_chunks(path: str | Path, chunks: Iterable[bytes]) -> int:
    """:func:`atomic_write_lines` for UTF-8 bytes (no decode/encode round trip); returns the chunk count."""
    with AtomicFile(path) as handle:
        for chunk in chunks:
            handle.write(chunk)
        return handle.count


class AtomicFile:
    """A file that replaces ``path`` only when complete: for writers that fill several files at once.

    Bytes go to a temporary file beside ``path``; :meth:`commit` fsyncs it and renames it over
    ``path``, :meth:`discard` removes it and leaves ``path`` as it was. As a context manager it
    commits on success and discards on any error. Several of them committed one after the other
    (an export's train and eval sides) are each whole, though not replaced in one step.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, self._tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        self._handle: IO[bytes] = os.fdopen(fd, "wb", buffering=1 << 20)
        self.count = 0
        """Chunks written."""

    def write(self, chunk: bytes) -> None:
        with writing(self.path):
            self._handle.write(chunk)
        self.count += 1

    def commit(self) -> None:
        """Make the written bytes durable and put them at ``path``."""
        try:
            with writing(self.path):
                self._handle.flush()
                os.fsync(self._handle.fileno())
            self._handle.close()
            os.chmod(self._tmp, 0o644)  # mkstemp makes 0600 files; outputs are ordinary files
            os.replace(self._tmp, self.path)
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        """Drop what was written; ``path`` keeps its old content (or stays absent)."""
        with contextlib.suppress(OSError):  # a full disk fails the flush of close(); the file goes anyway
            self._handle.close()
        Path(self._tmp).unlink(missing_ok=True)

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` so readers never see a partial file (tmp file + fsync + rename)."""
    atomic_write_lines(path, [text])


def atomic_write_jsonl(path: str | Path, rows: Iterable[Any]) -> int:
    """Stream JSON rows into ``path`` atomically (see :func:`atomic_write_lines`); returns the count."""
    option = orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
    return atomic_write_chunks(path, (orjson.dumps(row, option=option) for row in rows))


class JsonlJournal:
    """Append-only JSONL file: one ``append`` is one whole line, flushed and fsynced.

    Used for results of long runs; a process killed mid-write leaves at most one torn final
    line, which :func:`read_journal` skips and the next opening repairs (see :func:`repair_tail`).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        repair_tail(self.path)
        self._handle = os.fdopen(_open_own(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a",
                                 encoding="utf-8")

    def append(self, row: Any, *, sync: bool = True) -> None:
        """Write ``row`` as one line and flush it to the OS, so a killed process keeps it.

        ``sync`` also fsyncs it, so a lost machine keeps it; without, call :meth:`sync` later.
        """
        with writing(self.path):
            self._handle.write(dumps(row) + "\n")
            self._handle.flush()
            if sync:
                os.fsync(self._handle.fileno())

    def sync(self) -> None:
        """Make every appended row durable (fsync)."""
        with writing(self.path):
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        try:
            self._handle.close()
        except OSError as exc:  # the buffered tail could not be written: a full disk, said as such
            if exc.errno in FULL:
                raise DiskFullError(self.path) from None
            raise

    def __enter__(self) -> JsonlJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open_own(path: Path, flags: int) -> int:
    """Open a journal agentworld appends to: never through a link, never waiting on a FIFO, only a
    regular file (a link put at a run folder's fixed name would make the append land elsewhere).

    Raises:
        AgentWorldError: ``path`` is a link, a FIFO, a device or a folder (nothing was written).
    """
    from agentworld.errors import AgentWorldError
    from agentworld.marks import NotRegularError, describe, open_regular

    try:
        return open_regular(path, flags)
    except NotRegularError:
        raise AgentWorldError(f"{path}: is {describe(path)}, not a file agentworld wrote; nothing was "
                              "written to it (remove it, or use another output)") from None


def dropped_path(path: str | Path) -> Path:
    """Where :func:`repair_tail` keeps the torn tails it cut from ``path``: ``<name>.dropped`` beside it."""
    path = Path(path)
    return path.with_name(path.name + ".dropped")


def repair_tail(path: str | Path) -> None:
    """End ``path`` on a line boundary before appending to it, losing nothing that parses.

    Why: a row appended after an unfinished last line would be glued onto it. A last line that
    parses is a whole row whose newline is missing (a writer killed between the two, or a file
    made by hand), so it only gets its newline. One that does not parse is torn: it is appended to
    :func:`dropped_path` (fsynced first), cut from ``path``, and a warning names the file, the byte
    offset and the start of what was cut.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:
        return
    with os.fdopen(_open_own(path, os.O_RDWR), "rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return
        start = _last_line_start(handle, size)
        handle.seek(start)
        tail = handle.read()
        if not tail.strip() or _parses(tail):
            handle.seek(0, os.SEEK_END)
            handle.write(b"\n")
        else:
            side = dropped_path(path)
            with os.fdopen(_open_own(side, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab") as kept:
                kept.write(tail + b"\n")
                kept.flush()
                os.fsync(kept.fileno())
            handle.truncate(start)
            preview = tail[:PREVIEW_CHARS].decode("utf-8", "replace")
            log.warning("%s: dropped an unfinished last line at byte %d (%d bytes, kept in %s), starting %r",
                        path, start, len(tail), side, preview)
        handle.flush()
        os.fsync(handle.fileno())


def _last_line_start(handle: IO[bytes], size: int, block: int = 65536) -> int:
    """Offset just past the last ``\\n`` (0 if none), reading backwards so memory stays flat."""
    end = size
    while end > 0:
        begin = max(0, end - block)
        handle.seek(begin)
        found = handle.read(end - begin).rfind(b"\n")
        if found != -1:
            return begin + found + 1
        end = begin
    return 0


def _parses(raw: bytes) -> bool:
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return True


def read_journal(path: str | Path) -> Iterator[Any]:
    """Yield the JSON rows of a journal; a line that does not parse (a torn last one) is skipped.

    A last row missing only its newline is yielded: it is whole, and :func:`repair_tail` keeps it.
    """
    path = Path(path)
    if not path.exists():
        return
    with open(path, "rb") as handle:
        for raw in handle:
            raw = raw.strip()
            if not raw:
                continue
            try:
                yield orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue


class AsyncJournal(JsonlJournal):
    """A :class:`JsonlJournal` whose appends are awaited and fsynced in batches (group commit).

    Why: a run with many requests in flight would otherwise wait for one fsync per row. Rows
    queued while a write is under way are written and fsynced together, in a worker thread, so the
    event loop never waits on the disk and a row is acknowledged only once it is durable. The
    bookkeeping is guarded by locks, not tied to one event loop, so simulators that each run their
    own loop (or thread) may share one journal.
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self._state = threading.Lock()
        self._disk = threading.Lock()
        self._pending: list[str] = []
        self._queued = 0
        self._durable = 0
        self._failed: BaseException | None = None

    async def write(self, row: Any) -> None:
        """Append ``row``; returns once it is on disk (flushed and fsynced)."""
        await asyncio.to_thread(self._flush, self._queue(row))

    def write_now(self, row: Any) -> None:
        """:meth:`write` for code without an event loop: blocks until the row is durable."""
        self._flush(self._queue(row))

    def _queue(self, row: Any) -> int:
        with self._state:
            self._pending.append(dumps(row) + "\n")
            self._queued += 1
            return self._queued

    def _flush(self, upto: int) -> None:
        """Make rows ``1..upto`` durable, writing whatever else is queued in the same batch."""
        with self._disk:
            with self._state:
                if isinstance(self._failed, DiskFullError):
                    raise DiskFullError(self.path)
                if self._failed is not None:
                    raise OSError(f"{self.path}: an earlier write failed ({self._failed})")
                if self._durable >= upto:
                    return
                lines, self._pending, end = self._pending, [], self._queued
            try:
                with writing(self.path):
                    self._handle.write("".join(lines))
                    self._handle.flush()
                    os.fsync(self._handle.fileno())
            except BaseException as exc:
                with self._state:
                    self._failed = exc
                raise
            with self._state:
                self._durable = end

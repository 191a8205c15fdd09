"""The mark every file output carries: a sidecar beside it that records who wrote it and what.

Why a sidecar: the output guard (:mod:`agentworld.outputs`) must tell a file agentworld wrote from a
user's file before it replaces it. Sniffing the content ("valid JSON lines") cannot: a user's own
rows are JSON lines too, and the formats agentworld writes are read by other tools (AgentWorldBench
JSONL, TRL rows, HTML reports), so no header row can go into them. So beside each file output
``dir/name`` the guard keeps its mark ``dir/.name.agentworld``: a small JSON record of the command
and, once the command has ended, the size and SHA-256 of the bytes it left there. A file is ours only
when its mark says so and still matches it; one the user edited or replaced no longer does.

The mark's two states:

* ``writing``: put down when the command claims the output, before any byte of it is written. The
  writer holds an ``flock`` on the mark while it runs (the kernel lets go when it dies, SIGKILL
  included), so a later command tells a writer that is still running (busy) from one that was killed
  mid-way (its partial output is ours: ``--resume`` continues it).
* ``done``: written when the command ends, success or error, with the digest of the output as it is
  then (for an output that is a folder, ``data export --format hf-datasets``, a digest of its tree).

Marks are written atomically (a temporary file renamed over the mark) and read without following a
link, non-blocking (a FIFO put there cannot hang the reader) and only when they are regular files.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import socket
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

MARK_FORMAT = "agentworld-output/1"
"""The ``mark`` key of every mark file (anything else at a mark's path is not a mark)."""

MARK_LIMIT = 64 * 1024
"""The largest mark file read; a bigger one is not a mark."""

_CHUNK = 1 << 20
_MAX_NAME = 200
"""Longer output names get a hashed mark name (file names end at 255 bytes)."""


def mark_path(path: Path) -> Path:
    """Where the mark of the output ``path`` lives: ``dir/.name.agentworld`` beside it.

    >>> mark_path(Path("runs/episodes.jsonl"))
    PosixPath('runs/.episodes.jsonl.agentworld')
    """
    name = path.name
    if len(name.encode()) > _MAX_NAME:
        name = hashlib.sha256(name.encode()).hexdigest()[:40]
    return path.with_name(f".{name}.agentworld")


class NotRegularError(OSError):
    """A path that must be a regular file is a link, a FIFO, a device, a socket or a folder."""


def open_regular(path: Path, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    """Open ``path`` without following a link and without blocking (a FIFO), and only when it is a
    regular file (checked on the open descriptor); the descriptor is returned.

    Raises:
        FileNotFoundError: absent (and ``flags`` has no ``O_CREAT``).
        NotRegularError: a link, FIFO, device, socket or folder (nothing was read or written).
    """
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0),
                     mode)
    except OSError as exc:
        if exc.errno != errno.ENOENT and describe(path) not in ("missing", "a regular file"):
            raise NotRegularError(exc.errno, f"not a regular file ({describe(path)})", str(path)) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotRegularError(0, f"not a regular file ({describe(path)})", str(path))
    return fd


def describe(path: Path) -> str:
    """What kind of thing ``path`` is, in words (links not followed): for messages."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "missing"
    kinds = [(stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
             (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
             (stat.S_ISREG, "a regular file")]
    return next((word for test, word in kinds if test(mode)), "not a regular file")


def read_small(path: Path, limit: int = MARK_LIMIT) -> bytes | None:
    """The bytes of a small regular file; None when absent, not a regular file (a link, a FIFO) or
    larger than ``limit`` — what every reader of a fixed-name file inside an output folder uses."""
    try:
        fd = open_regular(path)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None


@dataclass(frozen=True)
class Digest:
    """The size and SHA-256 of an output's bytes (for a folder: of its tree)."""

    size: int
    sha256: str


def digest(path: Path) -> Digest | None:
    """The :class:`Digest` of a regular file or a folder (its tree); None for anything else."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISDIR(info.st_mode):
        hasher = hashlib.sha256()
        size = _tree(path, hasher)
        return Digest(size, hasher.hexdigest()) if size is not None else None
    try:
        fd = open_regular(path)
    except OSError:
        return None
    hasher, size = hashlib.sha256(), 0
    with os.fdopen(fd, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            hasher.update(chunk)
            size += len(chunk)
    return Digest(size, hasher.hexdigest())


def _tree(root: Path, hasher: Any) -> int | None:
    """Hash every entry under ``root`` into ``hasher`` (each folder's names sorted, then its
    sub-folders; links never followed, and walked without recursion however deep); the bytes seen, or
    None when the tree holds a link or a FIFO (nothing agentworld writes)."""
    total, todo = 0, [("", root)]
    while todo:
        prefix, folder = todo.pop()
        with os.scandir(folder) as entries:
            ordered = sorted(entries, key=lambda e: e.name)
        subs = []
        for entry in ordered:
            name = f"{prefix}{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                hasher.update(f"d {name}\n".encode())
                subs.append((f"{name}/", Path(entry.path)))
                continue
            found = digest(Path(entry.path)) if entry.is_file(follow_symlinks=False) else None
            if found is None:
                return None
            hasher.update(f"f {name} {found.size} {found.sha256}\n".encode())
            total += found.size
        todo.extend(reversed(subs))
    return total


@dataclass(frozen=True)
class Mark:
    """A parsed mark file."""

    command: str
    pid: int
    state: Literal["writing", "done"]
    digest: Digest | None


Verdict = Literal["none", "invalid", "matches", "changed", "killed", "busy"]
"""What the mark beside an output says about it: no mark; something at the mark's path that is not
one; the output is what agentworld left there; it changed since; a writer was killed mid-way; a writer
is running now."""


@dataclass(frozen=True)
class Reading:
    """The verdict on an output and the mark it came from (None for ``none`` and ``invalid``)."""

    verdict: Verdict
    mark: Mark | None = None


def parse(raw: bytes | None) -> Mark | None:
    """A mark from a mark file's bytes; None when they are not one."""
    try:
        stored = orjson.loads(raw) if raw is not None else None
    except orjson.JSONDecodeError:
        return None
    if not isinstance(stored, dict) or stored.get("mark") != MARK_FORMAT:
        return None
    state, pid, size, sha = stored.get("state"), stored.get("pid"), stored.get("size"), stored.get("sha256")
    if state not in ("writing", "done") or not isinstance(pid, int) or isinstance(pid, bool):
        return None
    found = Digest(size, sha) if isinstance(size, int) and isinstance(sha, str) else None
    if state == "done" and found is None:
        return None
    return Mark(str(stored.get("command", "")), pid, state, found)


def read(path: Path) -> Reading:
    """What the mark beside the output ``path`` says about it (the output's bytes are hashed)."""
    where = mark_path(path)
    if not os.path.lexists(where):
        return Reading("none")
    try:
        fd = open_regular(where)
    except OSError:
        return Reading("invalid")
    with os.fdopen(fd, "rb") as handle:
        mark = parse(handle.read(MARK_LIMIT + 1))
        if mark is None:
            return Reading("invalid")
        if mark.state == "writing":
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return Reading("busy", mark)
            return Reading("killed", mark)
    return Reading("matches" if digest(path) == mark.digest else "changed", mark)


def _record(command: str, state: str, found: Digest | None) -> bytes:
    fields = {"size": found.size, "sha256": found.sha256} if found is not None else {}
    return orjson.dumps({"mark": MARK_FORMAT, "state": state, "command": command, "pid": os.getpid(),
                         "host": socket.gethostname(), **fields}) + b"\n"


def _put(where: Path, data: bytes, *, hold: bool) -> int | None:
    """Write ``data`` at ``where`` atomically; with ``hold``, the new file's descriptor comes back
    locked (``flock``, taken before the rename so no reader sees it unlocked)."""
    fd, tmp = tempfile.mkstemp(prefix=f"{where.name}.", suffix=".tmp", dir=where.parent)
    try:
        if hold:
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, data)
        os.fchmod(fd, 0o644)
        if not hold:
            os.fsync(fd)
        os.replace(tmp, where)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if hold:
        return fd
    os.close(fd)
    return None


def _signature(path: Path) -> tuple[int, ...] | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_mode, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


class Claim:
    """One output claimed by this process: its ``writing`` mark, held until :meth:`end`.

    What :meth:`end` leaves: an output that is unchanged since the claim gets its old mark back
    (byte for byte, or none: a command that wrote nothing leaves no trace); one that changed gets a
    ``done`` mark with its digest; one that is gone (never created, or removed by the command, like
    a rollout's journal) gets none.
    """

    def __init__(self, path: Path, command: str) -> None:
        self.path = path
        self.where = mark_path(path)
        self.before = read_small(self.where) if os.path.lexists(self.where) else None
        self.signature = _signature(path)
        self.command = command
        self._fd = _put(self.where, _record(command, "writing", None), hold=True)

    def end(self) -> None:
        """Complete, restore or remove the mark (see the class docstring); then let go of it."""
        try:
            now = _signature(self.path)
            if now == self.signature:
                self._restore()
            elif now is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.where)
            else:
                found = digest(self.path)
                if found is None:  # replaced by a link or a FIFO meanwhile: not ours to mark
                    os.unlink(self.where)
                else:
                    _put(self.where, _record(self.command, "done", found), hold=False)
        finally:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _restore(self) -> None:
        if self.before is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.where)
        else:
            _put(self.where, self.before, hold=False)

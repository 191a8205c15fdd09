"""The one guard of every command that writes: refuse what is not ours, one writer per run folder.

Why one guard: each command used to check its own ``--out`` (or not at all): ``synth envs`` and
``synth check`` overwrote a foreign folder's ``summary.json`` and ``report.*``, ``train rollout``
replaced a foreign file and its siblings and, given a folder, failed only after every episode had
run. Here the rule is stated once and :func:`agentworld.cli_support.config_command` applies it to
every config field marked as an output (``json_schema_extra={"output": "folder"}`` or ``"file"``),
before the command body runs — so before any request is sent or a byte is written.

The rule:

* a folder is ours when it is new or empty, when it holds :data:`LOCK_NAME` written by a command of
  the same config (the lock file doubles as the owner's mark), or when the config's
  ``owns_output(field, path)`` recognises it (run folders written before the mark existed);
* a file is ours when it is absent or empty, when ``--overwrite`` is given, when
  ``owns_output`` says so, or when it is what agentworld writes (:func:`written_by_agentworld`:
  JSON lines, a JSON document, an HTML report naming agentworld). Folders, devices and FIFOs never are.

One writer: a folder output is locked with ``fcntl.flock`` on :data:`LOCK_NAME` for the rest of the
process (the kernel releases it when the process ends, SIGKILL included), so a second process on the
same folder exits 2 naming the folder and the holder's pid instead of paying every request twice.
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Callable
from pathlib import Path

import orjson

from agentworld.errors import AgentWorldError

LOCK_NAME = ".agentworld.lock"
"""The lock file in every folder output: holds the writer's pid and the folder's kind (config name)."""

SNIFF_BYTES = 1 << 20
"""How much of an existing file is read to tell whether agentworld wrote it."""

_held: dict[Path, tuple[int, bool]] = {}
"""The folders this process holds the lock of: the lock's descriptor, whether the guard made the folder."""


class ForeignOutputError(AgentWorldError):
    """An output path holds something agentworld did not write; nothing in it was changed."""


class BusyOutputError(AgentWorldError):
    """Another live process is writing into the same output folder."""


def is_empty(folder: Path) -> bool:
    """Whether ``folder`` holds nothing but agentworld's lock file (an unused run folder)."""
    return all(entry.name == LOCK_NAME for entry in folder.iterdir())


def _lock_kind(folder: Path) -> str | None:
    try:
        raw = (folder / LOCK_NAME).read_bytes()[:4096]
        stored = orjson.loads(raw)
    except (OSError, ValueError):
        return None
    kind = stored.get("kind") if isinstance(stored, dict) else None
    return kind if isinstance(kind, str) else None


def written_by_agentworld(path: Path) -> bool:
    """Whether a file looks like one agentworld writes: its first line a JSON object (JSON lines),
    a JSON document starting with ``{`` or ``[``, or HTML that names agentworld. A text file, a
    binary, a script or a user's notes are not."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return False
    text = head.lstrip()
    if text[:1] in (b"{", b"["):
        first = text.split(b"\n", 1)[0].strip()
        try:
            return isinstance(orjson.loads(first), (dict, list))
        except orjson.JSONDecodeError:
            return text[:1] == b"[" or first in (b"{", b"[")  # a pretty-printed JSON document
    lowered = text[:4096].lower()
    return lowered.startswith((b"<!doctype html", b"<html")) and b"agentworld" in head.lower()


def claim_file(path: Path, *, flag: str = "--out", ours: Callable[[Path], bool] | None = None,
               overwrite: bool = False) -> None:
    """Refuse ``path`` as a file output unless it is ours (see the module docstring).

    Raises:
        ForeignOutputError: ``path`` is a folder, not a regular file, or a file agentworld did not
            write (left byte-identical).
    """
    try:
        info = path.stat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ForeignOutputError(f"{flag} {path}: cannot read it ({exc.strerror})") from None
    if stat.S_ISDIR(info.st_mode):
        if ours is not None and ours(path):
            return  # an output that is a folder in some formats (data export --format hf-datasets)
        raise ForeignOutputError(f"{flag} {path}: is a folder; give a file name")
    if not stat.S_ISREG(info.st_mode):
        raise ForeignOutputError(f"{flag} {path}: not a regular file; give a new file name")
    if info.st_size == 0 or overwrite:
        return
    if (ours is not None and ours(path)) or written_by_agentworld(path):
        return
    raise ForeignOutputError(f"{flag} {path}: exists and was not written by agentworld; nothing was "
                             "changed. Give a new file name (or remove it yourself)")


def claim_folder(path: Path, *, kind: str, command: str, flag: str = "--out",
                 ours: Callable[[Path], bool] | None = None) -> None:
    """Refuse ``path`` as a folder output unless it is ours, then lock it for this process.

    Raises:
        ForeignOutputError: ``path`` is a file, unreadable, or a non-empty folder of something else.
        BusyOutputError: another live process holds the folder's lock.
    """
    if path.exists() or path.is_symlink():
        if not path.is_dir():
            raise ForeignOutputError(f"{flag} {path}: exists and is not a folder; give a new or empty "
                                     "folder")
        try:
            empty = is_empty(path)
        except OSError as exc:
            raise ForeignOutputError(f"{flag} {path}: cannot read the folder ({exc.strerror})") from None
        if not empty and _lock_kind(path) != kind and not (ours is not None and ours(path)):
            raise ForeignOutputError(f"{flag} {path}: not empty and not an agentworld {command} folder; "
                                     "nothing was changed. Give a new or empty folder")
    created = not path.exists()
    path.mkdir(parents=True, exist_ok=True)
    lock_folder(path, kind=kind, command=command, created=created)


def lock_folder(folder: Path, *, kind: str, command: str, created: bool = False) -> None:
    """Hold ``folder``'s writer lock until the process ends or :func:`release_all` (re-entrant).

    ``created``: the caller made the folder for this command; :func:`release_all` removes it again
    when the command wrote nothing into it (a user error found after the guard leaves no trace).

    Raises:
        BusyOutputError: another process holds it (its pid named).
    """
    key = folder.resolve()
    if key in _held:
        return
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 4096, 0)
        os.close(fd)
        try:
            pid = orjson.loads(holder).get("pid", "?")
        except (ValueError, AttributeError):
            pid = "?"
        raise BusyOutputError(f"{folder}: another agentworld process (pid {pid}) is writing into this "
                              "folder; wait for it to end or give another folder") from None
    record = orjson.dumps({"pid": os.getpid(), "kind": kind, "command": f"agentworld {command}"}) + b"\n"
    os.ftruncate(fd, 0)
    os.pwrite(fd, record, 0)
    _held[key] = (fd, created)


def release_all() -> None:
    """Let go of every lock this process holds (the CLI calls it when a command returns); a folder
    the guard created and nothing was written into is removed."""
    while _held:
        folder, (fd, created) = _held.popitem()
        try:
            if created and is_empty(folder):
                (folder / LOCK_NAME).unlink()
                folder.rmdir()
        except OSError:
            pass  # written to meanwhile, or already gone: leave it
        finally:
            os.close(fd)

"""The one guard of every command that writes: refuse what is not ours, one writer per output.

Why one guard: each command used to check its own ``--out`` (or not at all): ``synth envs`` and
``synth check`` overwrote a foreign folder's ``summary.json`` and ``report.*``, ``train rollout``
replaced a foreign file and its siblings and, given a folder, failed only after every episode had
run. Here the rule is stated once and :func:`agentworld.cli_support.claim_outputs` applies it to
every config field marked as an output (``json_schema_extra={"output": "folder"}`` or ``"file"``,
with the files written beside a file output named in ``"siblings"``), before the command body runs —
so before any request is sent or a byte is written.

Every output carries a mark of its own, and the guard asks for that mark, never for "valid JSON":

* a **folder** output holds :data:`LOCK_NAME`, written by the command that claimed it (the writer's
  pid and the config's kind). A folder is ours when it is new, when it holds nothing but such a lock
  file, when its lock names the same kind, or when the config's ``owns_output(field, path)`` finds
  the explicit format mark its run folders carry (``config.json``'s ``format``). A folder holding a
  link, a FIFO, a device or a socket anywhere is never ours: agentworld writes none, and a writer
  opening a fixed name there would follow it or hang.
* a **file** output has a mark beside it (:mod:`agentworld.marks`): ``.NAME.agentworld``, put down
  as ``writing`` when the output is claimed and completed with the size and SHA-256 of the bytes when
  the command ends (success or error; a claimed file never created gets no mark). A file is ours when
  it is absent or empty, when ``--overwrite`` is given, when its mark's digest matches its bytes, or
  when its mark says a writer that is no longer alive was writing it (a killed run, to resume). A
  file edited or replaced since, one without a mark (a user's, or one written before the mark
  existed), a link, a FIFO, a device or a folder is refused, and the message says how to go on.
* a command with a ``resume`` option refuses, without ``--resume``, an earlier non-empty output of
  its own that a new run would replace (``--overwrite`` replaces it where the command has one).

A mark can be forged by whoever can write beside the output: it keeps agentworld from taking a
user's file for its own, it does not defend against someone who writes into the user's folders.

One writer: a folder output is locked with ``fcntl.flock`` on :data:`LOCK_NAME`, a file output on its
``writing`` mark, for the rest of the command (the kernel lets go when the process ends, SIGKILL
included), so a second process on the same output exits 2 naming the holder's pid instead of paying
every request twice. The lock is opened without following a link and without blocking, and only
when it is a regular file.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Callable
from pathlib import Path

import orjson

from agentworld import marks
from agentworld.errors import AgentWorldError

LOCK_NAME = ".agentworld.lock"
"""The lock file in every folder output: holds the writer's pid and the folder's kind (config name)."""

MAX_SCAN = 100_000
"""How many entries of an existing folder output are looked at for links and FIFOs."""

_held: dict[Path, tuple[int, bool]] = {}
"""The folders this process holds the lock of: the lock's descriptor, whether the guard made the folder."""
_claims: dict[Path, marks.Claim] = {}
"""The file outputs this process holds the ``writing`` mark of."""
_made: list[Path] = []
"""Parent folders made so a file output's mark could be put down (removed again when left empty)."""


class ForeignOutputError(AgentWorldError):
    """An output path holds something agentworld did not write; nothing in it was changed."""


class BusyOutputError(AgentWorldError):
    """Another live process is writing into the same output."""


def _lock_record(folder: Path) -> dict[str, object] | None:
    raw = marks.read_small(folder / LOCK_NAME, 4096)
    try:
        stored = orjson.loads(raw) if raw is not None else None
    except orjson.JSONDecodeError:
        return None
    return stored if isinstance(stored, dict) and isinstance(stored.get("kind"), str) else None


def is_empty(folder: Path) -> bool:
    """Whether ``folder`` holds nothing but agentworld's lock file (an unused run folder): a regular
    file holding a lock record; a link, a FIFO or anything else at that name does not count."""
    with os.scandir(folder) as entries:
        names = [entry.name for entry in entries]
    return not names or (names == [LOCK_NAME] and _lock_record(folder) is not None)


def stray_entry(folder: Path) -> Path | None:
    """The first entry under ``folder`` that agentworld never writes (a symbolic link, a FIFO, a
    device, a socket), links not followed; None when there is none among the first :data:`MAX_SCAN`."""
    todo, seen = [folder], 0
    while todo and seen < MAX_SCAN:
        with os.scandir(todo.pop()) as entries:
            for entry in entries:
                seen += 1
                if entry.is_dir(follow_symlinks=False):
                    todo.append(Path(entry.path))
                elif not entry.is_file(follow_symlinks=False):
                    return Path(entry.path)
    return None


def _refuse_strays(path: Path, flag: str) -> None:
    try:
        stray = stray_entry(path)
    except OSError as exc:
        raise ForeignOutputError(f"{flag} {path}: cannot read the folder ({exc.strerror})") from None
    if stray is not None:
        raise ForeignOutputError(f"{flag} {path}: holds {stray.relative_to(path)}, {marks.describe(stray)}, "
                                 "which agentworld never writes: not an agentworld output; nothing was "
                                 "changed. Give a new or empty folder")


def _usable(path: Path, flag: str) -> None:
    """Refuse a path no file system can hold (a NUL byte: only a config file can give one)."""
    if "\x00" in str(path):
        raise ForeignOutputError(f"{flag} {str(path)!r}: holds a NUL byte; give a usable path")


def claim_file(path: Path, *, flag: str = "--out", command: str = "", overwrite: bool = False,
               overwrite_flag: str | None = None, resume_flag: str | None = None,
               folder_ok: bool = False) -> None:
    """Refuse ``path`` as a file output unless it is ours (see the module docstring), then put down
    its ``writing`` mark (held until :func:`release_all`).

    Args:
        overwrite_flag: the command's option that replaces a file on purpose (named in messages).
        resume_flag: the command's resume option when it is off: an earlier output of ours is refused.
        folder_ok: the output is a folder in this configuration (``data export --format hf-datasets``).

    Raises:
        ForeignOutputError: a link, FIFO, device, folder, or a file agentworld did not write (left
            byte-identical), or an earlier output that only ``resume_flag`` may continue.
        BusyOutputError: another live process is writing it.
    """
    _usable(path, flag)
    key = Path(os.path.abspath(path))
    if key in _claims:
        return
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise ForeignOutputError(f"{flag} {path}: cannot read it ({exc.strerror})") from None
    if info is not None:
        _check_file(path, info, flag=flag, overwrite=overwrite, overwrite_flag=overwrite_flag,
                    resume_flag=resume_flag, folder_ok=folder_ok)
    _begin(key, flag=flag, command=command)


def _check_file(path: Path, info: os.stat_result, *, flag: str, overwrite: bool, overwrite_flag: str | None,
                resume_flag: str | None, folder_ok: bool) -> None:
    replace = f", pass {overwrite_flag} to replace it" if overwrite_flag else ""
    if stat.S_ISDIR(info.st_mode) and folder_ok:
        _refuse_strays(path, flag)
    elif stat.S_ISDIR(info.st_mode):
        raise ForeignOutputError(f"{flag} {path}: is a folder; give a file name")
    elif not stat.S_ISREG(info.st_mode):
        raise ForeignOutputError(f"{flag} {path}: is {marks.describe(path)}, not a regular file; agentworld "
                                 "writes only files of its own: give a new file name")
    where = marks.mark_path(path)
    if os.path.lexists(where) and not stat.S_ISREG(os.lstat(where).st_mode):
        raise ForeignOutputError(f"{flag} {path}: its mark {where.name} is {marks.describe(where)}, not a "
                                 "regular file; nothing was changed. Remove it, or give a new file name")
    empty = info.st_size == 0 if stat.S_ISREG(info.st_mode) else not any(path.iterdir())
    if overwrite or empty:
        return
    reading = marks.read(path)
    if reading.verdict == "busy" and reading.mark is not None:
        raise BusyOutputError(f"{flag} {path}: another agentworld process (pid {reading.mark.pid}) is "
                              "writing it; wait for it to end or give another file name")
    if reading.verdict in ("matches", "killed"):
        if resume_flag is not None:
            by = f" {reading.mark.command}" if reading.mark is not None and reading.mark.command else ""
            raise ForeignOutputError(f"{flag} {path}: holds an earlier output of agentworld{by} that a new "
                                     f"run would replace; pass {resume_flag} to continue it{replace}, or "
                                     "give another file name")
        return
    why = {"changed": "was changed since agentworld wrote it (its bytes no longer match its mark "
                      f"{marks.mark_path(path).name})",
           "invalid": f"its mark {marks.mark_path(path).name} is not one agentworld wrote"}.get(
        reading.verdict, "exists and carries no agentworld mark (a file of yours, or one written before "
                         "agentworld marked its outputs)")
    raise ForeignOutputError(f"{flag} {path}: {why}; nothing was changed. Give a new file name{replace}, "
                             "or remove it yourself")


def _begin(key: Path, *, flag: str, command: str) -> None:
    """Put down the ``writing`` mark of ``key`` (making its parent folders, removed again if unused)."""
    missing = [p for p in (key.parent, *key.parent.parents) if not p.exists()]
    try:
        for folder in reversed(missing):
            folder.mkdir()
            _made.append(folder)
        _claims[key] = marks.Claim(key, command)
    except OSError as exc:
        raise ForeignOutputError(f"{flag} {key}: cannot write there ({exc.strerror or exc})") from None


def claim_folder(path: Path, *, kind: str, command: str, flag: str = "--out",
                 ours: Callable[[Path], bool] | None = None, resume_flag: str | None = None) -> None:
    """Refuse ``path`` as a folder output unless it is ours, then lock it for this process.

    Args:
        resume_flag: the command's resume option when it is off: a non-empty folder of ours is refused.

    Raises:
        ForeignOutputError: ``path`` is a file, unreadable, holds a link or a FIFO, a non-empty folder of
            something else, or an earlier run that only ``resume_flag`` may continue.
        BusyOutputError: another live process holds the folder's lock.
    """
    _usable(path, flag)
    if os.path.lexists(path):
        if not path.is_dir():
            raise ForeignOutputError(f"{flag} {path}: exists and is not a folder; give a new or empty "
                                     "folder")
        _refuse_strays(path, flag)
        if not is_empty(path):
            record = _lock_record(path)
            if (record is None or record.get("kind") != kind) and not (ours is not None and ours(path)):
                raise ForeignOutputError(f"{flag} {path}: not empty and not an agentworld {command} folder; "
                                         "nothing was changed. Give a new or empty folder")
            if resume_flag is not None:
                raise ForeignOutputError(f"{flag} {path}: holds an earlier run of agentworld {command} that "
                                         f"a new run would replace; pass {resume_flag} to continue it, or "
                                         "give another folder")
    created = not path.exists()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ForeignOutputError(f"{flag} {path}: cannot make the folder ({exc.strerror or exc})") from None
    lock_folder(path, kind=kind, command=command, created=created, flag=flag)


def lock_folder(folder: Path, *, kind: str, command: str, created: bool = False, flag: str = "--out") -> None:
    """Hold ``folder``'s writer lock until the process ends or :func:`release_all` (re-entrant).

    ``created``: the caller made the folder for this command; :func:`release_all` removes it again
    when the command wrote nothing into it (a user error found after the guard leaves no trace).

    Raises:
        ForeignOutputError: the lock is a link, a FIFO or anything but a regular file (left alone).
        BusyOutputError: another process holds it (its pid named).
    """
    key = folder.resolve()
    if key in _held:
        return
    try:
        fd = marks.open_regular(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        raise ForeignOutputError(f"{flag} {folder}: its {LOCK_NAME} is {marks.describe(folder / LOCK_NAME)}, "
                                 f"not a lock agentworld wrote ({exc.strerror}); nothing was changed. Give a "
                                 "new or empty folder") from None
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
    os.pwrite(fd, record, 0)  # then cut: a reader never sees the lock empty
    os.ftruncate(fd, len(record))
    _held[key] = (fd, created)


def release_all() -> None:
    """Let go of every output this process holds (the CLI calls it when a command returns, success or
    error): each file output's mark is completed, restored or removed (:class:`agentworld.marks.Claim`),
    a folder the guard created and nothing was written into is removed."""
    while _claims:
        _, claim = _claims.popitem()
        with contextlib.suppress(OSError):
            claim.end()
    while _made:
        with contextlib.suppress(OSError):
            _made.pop().rmdir()  # only when still empty
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

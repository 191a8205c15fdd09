"""Finding and killing a sandbox's processes on the host (by parent, by uid) from ``/proc``."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path


def _stat_rows() -> Iterator[tuple[int, bytes, int]]:
    """(pid, state, parent pid) of every process, from ``/proc/*/stat`` (this kernel may lack
    ``/proc/PID/task/*/children``); a process that ends while it is read is left out."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2:].split()
        if len(fields) > 1:
            yield int(entry), fields[0], int(fields[1])


def _proc_children(pid: int) -> list[int]:
    """Direct children of ``pid``."""
    return [child for child, _, parent in _stat_rows() if parent == pid]


def descendants(pid: int, *, skip: Collection[int] = ()) -> list[int]:
    """Live (not zombie) descendants of ``pid``: children, their children, and so on.

    ``skip``: processes left out together with everything below them.
    """
    children: dict[int, list[int]] = {}
    for child, state, parent in _stat_rows():
        if state != b"Z":
            children.setdefault(parent, []).append(child)
    found: list[int] = []
    todo = [pid]
    while todo:
        kids = [kid for kid in children.get(todo.pop(), []) if kid not in skip]
        found += kids
        todo += kids
    return found


def uid_pids(uid: int) -> list[int]:
    """Live processes whose real uid is ``uid``."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("Uid", "").split()[:1] == [str(uid)] and "zombie" not in fields.get("State", ""):
            pids.append(int(entry))
    return pids


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return False
    return data[data.rfind(b")") + 2:][:1] != b"Z"


def kill_sandbox_tree(outer_pid: int, *, wait_s: float = 3.0) -> None:
    """Kill a running ``bwrap`` (its PID namespace first, then bwrap itself) and wait for it.

    Killing bwrap's inner process (PID 1 of the sandbox's namespace) makes the kernel kill every
    process in the namespace, fork bombs included, and lets the outer bwrap be reaped by its own
    parent: killing the outer one first would orphan the inner one (a zombie where PID 1 of the
    host does not reap).
    """
    for child in _proc_children(outer_pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, signal.SIGKILL)
    deadline = time.monotonic() + wait_s
    while _alive(outer_pid) and time.monotonic() < deadline:
        time.sleep(0.02)
        if time.monotonic() > deadline - wait_s / 2:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(outer_pid, signal.SIGKILL)


def kill_until_gone(members: Callable[[], list[int]], *, wait_s: float = 3.0) -> bool:
    """SIGKILL every process ``members()`` lists until it lists none (forks racing the kill included).

    Signals go through pidfds opened before ``members()`` is read again, so a pid that exited and
    was reused meanwhile by an unrelated process is never hit. ``False`` if some are left after ``wait_s``.
    """
    deadline = time.monotonic() + wait_s
    while True:
        pids = members()
        if not pids:
            return True
        if time.monotonic() > deadline:
            return False
        fds: dict[int, int] = {}
        for pid in pids:
            with contextlib.suppress(OSError):
                fds[pid] = os.pidfd_open(pid)
        still = set(members())
        for pid, fd in fds.items():
            if pid in still:
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
            os.close(fd)
        time.sleep(0.005)

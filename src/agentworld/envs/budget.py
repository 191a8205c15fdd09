"""Per-sandbox budgets: a memory and a pids cgroup, and a size-limited tmpfs for ``/app`` and ``/root``.

Why: rlimits are per process (``RLIMIT_AS``: three 800 MB processes each pass a 1 GiB limit) or per
uid (``RLIMIT_NPROC`` of uid 65534 is shared by every sandbox on the machine, so a fork bomb in one
stops the others from starting), and a plain host folder lets ``/app`` fill the host's disk. So each
sandbox gets its own cgroup (v1 or v2, whichever hosts the controller), created under this process's
own cgroup so the limits of its parents still hold, and its files live on a tmpfs of fixed size
(whose pages are charged to the sandbox's memory cgroup as well). Where the machine does not allow
one of these (not root, no writable cgroup), the sandbox falls back to rlimits and, as root, a
private uid per sandbox, and :func:`warn_unenforced` says once per process what is not enforced.

Everything a sandbox holds is found from its host folder (the tmpfs mounted on it, the cgroups
listed in it), so :func:`release` frees it the same way on ``Sandbox.close`` and when sweeping
after an owner killed by SIGKILL.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import logging
import os
import stat
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agentworld.envs.cgroups import CGROUPS_FILE, JOIN_SCRIPT, kill_cgroup, make_cgroups, remove_cgroup
from agentworld.envs.procs import kill_until_gone, uid_pids
from agentworld.envs.tree import remove_tree

log = logging.getLogger("agentworld.envs.sandbox")

NOBODY_UID = 65534
UID_POOL_START = 400_000
UID_POOL_SIZE = 100_000
UID_LOCKS = "agentworld-uids"
"""``<tmp>/agentworld-uids/<uid>.lock``: a sandbox holds ``flock`` on its uid's file while it lives."""
MS_NOSUID, MS_NODEV, MNT_DETACH = 2, 4, 2


@dataclass(frozen=True)
class Budget:
    """What enforces one sandbox's budget on this machine.

    Attributes:
        cgroups: controller (``memory``/``pids``) -> the sandbox's cgroup folder hosting it.
        disk_mounted: ``/app`` and ``/root`` are on a tmpfs of ``disk_budget_bytes``.
        uid: host uid the sandbox runs as.
        nproc_rlimit: no pids cgroup, so ``RLIMIT_NPROC`` of ``uid`` must stop fork bombs.
        unenforced: what is not enforced and why, one plain sentence each.
        lease_fd: lock held on a private uid (closed on release), or ``None``.
    """

    cgroups: Mapping[str, Path] = field(default_factory=dict)
    disk_mounted: bool = False
    uid: int = 0
    nproc_rlimit: bool = True
    unenforced: tuple[str, ...] = ()
    lease_fd: int | None = None

    def join_argv(self) -> list[str]:
        """The prefix that puts a command into the sandbox's cgroups (empty without cgroups)."""
        folders = sorted({str(p / "cgroup.procs") for p in self.cgroups.values()})
        return ["sh", "-c", JOIN_SCRIPT, "agentworld-sandbox", *folders, "--"] if folders else []


def human_size(n: int) -> str:
    """``2 GiB``, ``64 MiB``, ``300 bytes``: sizes as people say them in messages."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << (shift - 4)) == 0:
            return f"{n / (1 << shift):g} {unit}"
    return f"{n} bytes"


_libc = ctypes.CDLL(None, use_errno=True)


def mount_tmpfs(target: Path, size_bytes: int) -> str | None:
    """Mount a tmpfs of ``size_bytes`` on ``target``; the reason when that is not possible."""
    options = f"size={size_bytes},mode=0711".encode()
    if _libc.mount(b"tmpfs", os.fsencode(target), b"tmpfs", MS_NOSUID | MS_NODEV, options) == 0:
        return None
    code = ctypes.get_errno()
    hint = "; needs root" if code in (errno.EPERM, errno.EACCES) else ""
    return f"cannot mount a tmpfs ({os.strerror(code)}{hint})"


def unmount(target: Path) -> None:
    if os.path.ismount(target) and _libc.umount2(os.fsencode(target), 0) != 0:
        _libc.umount2(os.fsencode(target), MNT_DETACH)


def lease_uid() -> tuple[int, int]:
    """A host uid no other live sandbox uses, and the lock that holds it (released when closed or killed)."""
    folder = Path(tempfile.gettempdir()) / UID_LOCKS
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise OSError(errno.EPERM, f"{folder} is not a folder owned by uid {os.geteuid()}")
    for uid in range(UID_POOL_START, UID_POOL_START + UID_POOL_SIZE):
        fd = os.open(folder / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return uid, fd
    raise OSError(errno.EAGAIN, "every uid of the sandbox pool is in use")


def recorded_cgroups(root: Path) -> list[Path]:
    """The cgroup folders a sandbox folder says it made (only ones named after that folder)."""
    try:
        lines = (root / CGROUPS_FILE).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    paths = [Path(line) for line in lines if line]
    return [p for p in paths if p.is_absolute() and p.name == root.name and ".." not in p.parts]


def release(root: Path, lease: tuple[int, int] | None = None) -> None:
    """Free everything a sandbox folder holds: its processes, cgroups, tmpfs, files and uid lease.

    Args:
        root: the sandbox's host folder.
        lease: ``(uid, lock fd)`` of a private uid: every process of that uid is the sandbox's.
    """
    cgroups = recorded_cgroups(root)
    for folder in cgroups:
        kill_cgroup(folder)
    if lease is not None:
        kill_until_gone(lambda: uid_pids(lease[0]))
    with contextlib.suppress(OSError):
        unmount(root)
    remove_tree(root)
    for folder in cgroups:
        remove_cgroup(folder)
    if lease is not None:
        with contextlib.suppress(OSError):
            os.close(lease[1])


def establish(root: Path, *, memory_budget_bytes: int, max_processes: int, disk_budget_bytes: int,
              uid: int | None, use_cgroups: bool) -> Budget:
    """Set up the budget of the sandbox whose host folder is ``root`` (see the module docstring)."""
    as_root = os.geteuid() == 0
    unenforced: list[str] = []
    disk_failed = mount_tmpfs(root, disk_budget_bytes)
    limits = {"memory": memory_budget_bytes, "pids": max_processes}
    if use_cgroups:
        cgroups, failed = make_cgroups(root, limits)
    else:
        cgroups, failed = {}, dict.fromkeys(limits, "cgroups are turned off (use_cgroups=False)")
    if "memory" in failed:
        unenforced.append(f"memory budget of {human_size(memory_budget_bytes)}: {failed['memory']}; "
                          "only the per-process address-space limit applies")
    lease_fd = None
    if not as_root:
        uid = os.getuid()
    elif uid is None and "pids" in cgroups:
        uid = NOBODY_UID
    elif uid is None:
        uid, lease_fd = lease_uid()
    if "pids" in failed and lease_fd is None:
        unenforced.append(f"process budget of {max_processes}: {failed['pids']}; RLIMIT_NPROC counts "
                          f"every process of uid {uid}, not just this sandbox's")
    if disk_failed is not None:
        unenforced.append(f"disk budget of {human_size(disk_budget_bytes)} for /app and /root: "
                          f"{disk_failed}; only the per-file size limit applies")
    return Budget(cgroups=cgroups, disk_mounted=disk_failed is None, uid=uid,
                  nproc_rlimit="pids" not in cgroups, unenforced=tuple(unenforced), lease_fd=lease_fd)


_warned = threading.Lock()


def warn_unenforced(unenforced: tuple[str, ...]) -> None:
    """Log, once per process, which budgets this machine cannot enforce and why."""
    if unenforced and _warned.acquire(blocking=False):
        log.warning("agentworld sandbox: not enforced on this machine: %s", "; ".join(unenforced))

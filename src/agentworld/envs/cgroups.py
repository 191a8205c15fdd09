"""A cgroup per sandbox: find this process's place in each hierarchy, make, fill, empty and remove one.

Works with cgroup v1 and v2, whichever hosts the ``memory`` and ``pids`` controllers (they may be on
different ones). Sandbox cgroups are made under this process's *own* cgroup, so whatever limits its
parents have (a container, a CI job) still hold for the sandboxes.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agentworld.envs.procs import kill_until_gone

log = logging.getLogger("agentworld.envs.sandbox")

CONTROLLERS = ("memory", "pids")
CGROUPS_FILE = ".cgroups"
"""In a sandbox's host folder: its cgroup folders, one a line, written before they are made."""
JOIN_SCRIPT = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
"""``sh -c`` prelude: move this shell into each ``cgroup.procs`` given, then exec the sandbox command."""


@dataclass(frozen=True)
class Hierarchy:
    """This process's own cgroup in the hierarchy hosting one controller; sandbox cgroups go below it."""

    version: int
    parent: Path


def _unescape(text: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def _below(path: str, mount_root: str) -> str | None:
    """``path`` (from /proc/self/cgroup) relative to a mount of the hierarchy at ``mount_root``."""
    if mount_root == "/":
        return path.lstrip("/")
    if path == mount_root or path.startswith(mount_root.rstrip("/") + "/"):
        return path[len(mount_root):].lstrip("/")
    return None


@functools.cache
def hierarchies() -> tuple[Mapping[str, Hierarchy], Mapping[str, str]]:
    """Where this process sits for each controller, and why a controller has no usable hierarchy."""
    try:
        own = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError as exc:
        return {}, {c: f"cannot read /proc ({exc.strerror})" for c in CONTROLLERS}
    return parse_hierarchies(own, mounts)


def parse_hierarchies(own: list[str], mounts: list[str]) -> tuple[dict[str, Hierarchy], dict[str, str]]:
    """:func:`hierarchies` from the lines of ``/proc/self/cgroup`` and ``/proc/self/mountinfo``.

    A v1 hierarchy names its controllers in the mount options; the v2 one lists them in
    ``cgroup.controllers`` of this process's own cgroup folder (read from disk).
    """
    v1_paths: dict[str, str] = {}
    v2_path: str | None = None
    for line in own:
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[1]:
            v1_paths.update(dict.fromkeys(parts[1].split(","), parts[2]))
        elif len(parts) == 3:
            v2_path = parts[2]
    found: dict[str, Hierarchy] = {}
    v2_dir: Path | None = None
    for line in mounts:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        root, point, fstype, options = fields[3], _unescape(fields[4]), tail[0], tail[2].split(",")
        if fstype == "cgroup":
            for name in CONTROLLERS:
                rel = _below(v1_paths[name], root) if name in options and name in v1_paths else None
                if rel is not None and name not in found:
                    found[name] = Hierarchy(1, Path(point) / rel)
        elif fstype == "cgroup2" and v2_path is not None and v2_dir is None:
            rel = _below(v2_path, root)
            v2_dir = Path(point) / rel if rel is not None else None
    why: dict[str, str] = {}
    for name in CONTROLLERS:
        if name in found:
            continue
        try:
            available = (v2_dir / "cgroup.controllers").read_text().split() if v2_dir else []
        except OSError:
            available = []
        if name in available and v2_dir is not None:
            found[name] = Hierarchy(2, v2_dir)
        else:
            why[name] = f"no cgroup with the {name} controller is mounted for this process"
    return found, why


def _write(path: Path, value: object) -> None:
    path.write_text(f"{value}\n")


def _limit(folder: Path, version: int, controller: str, value: int) -> None:
    if controller == "pids":
        _write(folder / "pids.max", value)
    elif version == 1:
        _write(folder / "memory.limit_in_bytes", value)
        if (folder / "memory.memsw.limit_in_bytes").exists():
            _write(folder / "memory.memsw.limit_in_bytes", value)
    else:
        _write(folder / "memory.max", value)
        if (folder / "memory.swap.max").exists():
            _write(folder / "memory.swap.max", 0)


def _delegate(parent: Path, controllers: list[str]) -> None:
    """cgroup v2: let children of ``parent`` use ``controllers`` (fails if ``parent`` holds processes)."""
    enabled = (parent / "cgroup.subtree_control").read_text().split()
    wanted = [c for c in controllers if c not in enabled]
    if wanted:
        _write(parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in wanted))


def make_cgroups(root: Path, limits: Mapping[str, int]) -> tuple[dict[str, Path], dict[str, str]]:
    """Create the sandbox's cgroups (named like ``root``) with ``limits`` (controller -> value).

    Returns:
        controller -> cgroup folder for those that worked, and controller -> reason for the others.
    """
    found, why = hierarchies()
    failed = {c: why[c] for c in limits if c in why}
    groups: dict[tuple[int, Path], list[str]] = {}
    for name in limits:
        if name in found:
            groups.setdefault((found[name].version, found[name].parent), []).append(name)
    with open(root / CGROUPS_FILE, "w", encoding="utf-8") as handle:
        handle.writelines(f"{parent / root.name}\n" for _, parent in groups)
    made: dict[str, Path] = {}
    for (version, parent), names in groups.items():
        folder = parent / root.name
        try:
            if version == 2:
                _delegate(parent, names)
            folder.mkdir()
            for name in names:
                _limit(folder, version, name, limits[name])
        except OSError as exc:
            remove_cgroup(folder)
            failed.update(dict.fromkeys(names, f"cannot create a cgroup in {parent} ({exc.strerror})"))
            continue
        made.update(dict.fromkeys(names, folder))
    return made, failed


def cgroup_pids(folder: Path) -> list[int]:
    """Processes in a cgroup (empty when it is gone)."""
    try:
        return [int(p) for p in (folder / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def kill_cgroup(folder: Path, *, wait_s: float = 3.0) -> bool:
    """SIGKILL every process in a cgroup until it is empty; ``False`` if some are left after ``wait_s``."""
    if (folder / "cgroup.kill").exists():
        with contextlib.suppress(OSError):
            _write(folder / "cgroup.kill", 1)
    return kill_until_gone(lambda: cgroup_pids(folder), wait_s=wait_s)


def remove_cgroup(folder: Path, *, wait_s: float = 3.0) -> None:
    """Kill what is left in a cgroup and remove it (best effort: a sweep retries later)."""
    kill_cgroup(folder, wait_s=wait_s)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                log.debug("cannot remove cgroup %s: %s", folder, exc)
                return
        time.sleep(0.02)

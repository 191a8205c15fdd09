"""Removing a folder tree this process owns, and nothing outside it.

Why: cleaners race. A sandbox's own ``close``, another process's sweep of stale sandbox folders,
a janitor and a second worker after a crash can all remove the same folder at once, so a file or
folder that vanished under one of them (``ENOENT``) means the work is done, not that it failed. A
cleaner that fixes permissions to get on must only touch folders *inside* the tree: the tree's
parent is the system temp folder, and making it ``0700`` once broke every sandbox on the machine
and every other user of ``/tmp``. Permissions are changed only on real folders (never through a
symlink), ownership never. A folder that is still a mount point (``EBUSY``) is left for a later
sweep with a warning rather than fought over.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("agentworld.envs.sandbox")

_LISTING = {os.open, os.scandir, os.listdir, os.lstat}


@dataclass
class _Removal:
    """What one :func:`remove_tree` call could not remove, by reason."""

    root: str
    busy: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def inside(self, path: str) -> bool:
        """``path`` is the root or below it (paths come from ``shutil.rmtree``, built from the root)."""
        return path == self.root or path.startswith(self.root + os.sep)

    def handle(self, func: Any, name: str, exc: BaseException) -> None:
        if isinstance(exc, OSError) and exc.errno == errno.ENOENT:
            return
        if isinstance(exc, OSError) and exc.errno == errno.EBUSY:
            self.busy.append(name)
            return
        if not (isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM)):
            self.failed.append(f"{name}: {exc}")
            return
        parent = os.path.dirname(name)
        if self.inside(parent):
            _open_up(parent)
        try:
            if func in _LISTING and self.inside(name) and _open_up(name):
                shutil.rmtree(name, **_handler_kwargs(self))
            else:
                func(name)
        except FileNotFoundError:
            pass
        except OSError as again:
            self.failed.append(f"{name}: {again}")


def _open_up(folder: str) -> bool:
    """Give the owner full access to ``folder`` if it is a real folder (not a symlink); whether it is."""
    try:
        fd = os.open(folder, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            return False
        with contextlib.suppress(OSError):
            os.chmod(f"/proc/self/fd/{fd}", stat.S_IRWXU)
        return True
    finally:
        os.close(fd)


def _handler_kwargs(removal: _Removal) -> dict[str, Any]:
    if sys.version_info >= (3, 12):
        return {"onexc": removal.handle}
    return {"onerror": lambda func, name, info: removal.handle(func, name, info[1])}


def remove_tree(path: str | Path, *, warn: bool = True) -> bool:
    """Remove the folder ``path`` and everything below it; whether it is gone afterwards.

    Never raises: another remover getting there first is success, a busy mount point is left
    (logged as a warning naming it, for a later sweep), anything else is logged and left.
    Permissions are only changed on folders inside ``path`` (``path`` included, its parent never).
    ``warn=False`` leaves the logging to a caller that retries.
    """
    removal = _Removal(os.path.abspath(os.fspath(path)))
    shutil.rmtree(removal.root, **_handler_kwargs(removal))
    if warn and removal.busy:
        log.warning("agentworld: left %s for a later cleanup: still a mount point in use (%s)",
                    removal.root, ", ".join(removal.busy))
    elif warn and removal.failed:
        log.warning("agentworld: could not remove all of %s: %s", removal.root, "; ".join(removal.failed[:3]))
    return not os.path.lexists(removal.root)

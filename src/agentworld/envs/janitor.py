"""A watchdog process that cleans up after its owner, even when the owner is killed with SIGKILL.

Why: a recorder that starts real servers in temporary folders cannot run ``finally`` blocks after
``kill -9``. So it starts a :class:`Janitor` first: a small separate process that reads the folders
to remove from a pipe and waits for that pipe to close. The pipe closes when the owner calls
:meth:`Janitor.close` *or* dies in any way; the janitor then SIGKILLs every process still carrying
the owner's tag in its environment (:attr:`Janitor.env`: children, grandchildren, daemons they
forked — whatever their process group) and removes the folders. Run as ``python -m
agentworld.envs.janitor TOKEN``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

TAG = "AGENTWORLD_JANITOR_TAG"
"""Environment variable that marks the processes a janitor kills."""


def tagged_pids(token: str) -> list[int]:
    """Live processes whose environment holds ``TAG=token`` (the caller's own excluded)."""
    needle = f"{TAG}={token}".encode()

    def tagged(pid: str) -> bool:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_bytes()
        return needle in environ.split(b"\0") and state[state.rfind(b")") + 2:][:1] != b"Z"

    return _processes(tagged)


def _processes(matches: Callable[[str], bool]) -> list[int]:
    """Processes (not the caller) for which ``matches(pid)`` holds; one that ends meanwhile is skipped."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        with suppress(OSError):
            if matches(entry):
                found.append(int(entry))
    return found


class Janitor:
    """Owner's side: start the watchdog, name folders for it, pass :attr:`env` to every child.

    Use as a context manager; leaving it (or the owner dying) makes the watchdog clean up.
    """

    def __init__(self) -> None:
        self.token = uuid.uuid4().hex
        self.env = {TAG: self.token}
        self._proc = subprocess.Popen([sys.executable, "-m", "agentworld.envs.janitor", self.token],
                                      stdin=subprocess.PIPE, start_new_session=True,
                                      env={k: v for k, v in os.environ.items() if k != TAG})

    def track(self, folder: str | Path) -> None:
        """Have ``folder`` removed when the owner is done or dies."""
        assert self._proc.stdin is not None
        self._proc.stdin.write(f"{Path(folder).resolve()}\n".encode())
        self._proc.stdin.flush()

    def close(self) -> None:
        """Clean up now: kill tagged processes, remove tracked folders; wait for it (idempotent)."""
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            self._proc.stdin.close()
        self._proc.wait()

    def __enter__(self) -> Janitor:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def mentioning(folders: list[str]) -> list[int]:
    """Live processes whose command line names one of ``folders`` (the caller's own excluded)."""
    needles = [folder.encode() for folder in folders]

    def names_one(pid: str) -> bool:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        return any(needle in cmdline for needle in needles)

    return _processes(names_one)


def sweep(token: str, folders: list[str], *, attempts: int = 20) -> None:
    """Kill the processes tagged ``token`` or naming a folder, then remove ``folders``.

    Removal is retried: a browser's helper process that was not tagged (it was started with a
    cleaned environment) can still write into its profile while the tree is being removed — a
    recorder killed with SIGKILL left ``…/Default/.org.chromium.Chromium.Network Persistent State``
    behind that way. Processes whose command line names a folder (``--user-data-dir=…``) are
    killed too.
    """
    from agentworld.envs.procs import kill_until_gone
    from agentworld.envs.tree import remove_tree

    for attempt in range(attempts):
        kill_until_gone(lambda: tagged_pids(token) + mentioning(folders))
        for folder in folders:
            remove_tree(folder, warn=attempt == attempts - 1)
        if not any(os.path.exists(folder) for folder in folders):
            return
        time.sleep(0.1)


def main(argv: list[str]) -> int:
    """Read folder paths from stdin until it closes, then sweep."""
    if len(argv) != 1:
        print("usage: python -m agentworld.envs.janitor TOKEN", file=sys.stderr)
        return 2
    folders: list[str] = []
    with suppress(OSError, KeyboardInterrupt):
        for line in sys.stdin:
            if line.strip():
                folders.append(line.strip())
    sweep(argv[0], folders)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

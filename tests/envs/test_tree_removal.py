"""Cleaners remove their own tree and touch nothing outside it, even when they race.

Two ``release()`` calls on one stale sandbox folder (two processes sweeping stale roots, a janitor
and ``close``) used to make the folder's *parent* — the system temp folder — mode ``0700``: the
loser's error handler chmodded the parent of whatever it failed to remove, and after that every
sandbox on the machine failed. The race and busy-mount tests failed on that code; the others
guard what the fix keeps (read-only folders inside are still removed, symlinks are not followed).
"""

from __future__ import annotations

import ctypes
import logging
import os
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from agentworld.envs.budget import release
from agentworld.envs.janitor import sweep


def _tree(parent: Path, files: int = 3000) -> Path:
    parent.mkdir(mode=0o755)
    parent.chmod(0o755)
    root = parent / "agentworld-sandbox-1-stale"
    root.mkdir()
    for i in range(files // 100):
        folder = root / f"d{i}"
        folder.mkdir()
        for j in range(100):
            (folder / f"f{j}").write_bytes(b"x")
    return root


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _race(*cleanups: object) -> list[BaseException]:
    barrier = threading.Barrier(len(cleanups))
    errors: list[BaseException] = []

    def run(cleanup):  # type: ignore[no-untyped-def]
        barrier.wait()
        try:
            cleanup()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(c,)) for c in cleanups]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


@pytest.mark.parametrize("trial", range(3))
def test_two_concurrent_releases_remove_the_folder_and_leave_its_parent_alone(tmp_path: Path,
                                                                             trial: int) -> None:
    root = _tree(tmp_path / "tmp")
    errors = _race(lambda: release(root), lambda: release(root))
    assert errors == []
    assert not root.exists()
    assert _mode(root.parent) == 0o755, f"parent became {oct(_mode(root.parent))}"


def test_a_release_racing_the_janitor_leaves_the_parent_alone(tmp_path: Path) -> None:
    root = _tree(tmp_path / "tmp")
    errors = _race(lambda: release(root), lambda: sweep("no-such-token", [str(root)], attempts=1))
    assert errors == []
    assert not root.exists()
    assert _mode(root.parent) == 0o755


def _mount_tmpfs(target: Path) -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.mount(b"tmpfs", os.fsencode(target), b"tmpfs", 0, b"size=1m") == 0


def test_a_busy_mount_inside_is_left_for_later_with_a_warning(tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    root = _tree(tmp_path / "tmp", files=100)
    busy = root / "mnt"
    busy.mkdir()
    if os.geteuid() != 0 or not _mount_tmpfs(busy):
        pytest.skip("needs root and permission to mount a tmpfs")
    try:
        with caplog.at_level(logging.WARNING, logger="agentworld.envs.sandbox"):
            release(root)
        assert _mode(root.parent) == 0o755
        assert busy.exists()
        assert any(str(busy) in record.getMessage() and "later" in record.getMessage()
                   for record in caplog.records)
    finally:
        subprocess.run(["umount", "-l", str(busy)], check=False)
    release(root)
    assert not root.exists()


def test_read_only_folders_of_the_owner_are_removed_without_following_symlinks() -> None:
    """As a plain user (the case the permission fix exists for): a ``0555`` folder inside is removed;
    a symlink inside pointing at a read-only folder outside leaves that folder's mode as it was."""
    base = Path(tempfile.mkdtemp(prefix="agentworld-test-tree-"))
    base.chmod(0o755)
    script = f"""
import os
from pathlib import Path
from agentworld.envs.budget import release  # before dropping to a uid that cannot read the stdlib
base = Path({str(base)!r})
if os.geteuid() == 0:
    os.chown(base, 65534, 65534)
    os.setgid(65534); os.setuid(65534)
outside, root = base / "outside", base / "agentworld-sandbox-1-ro"
outside.mkdir()
(root / "ro" / "deep").mkdir(parents=True)
(root / "ro" / "deep" / "f").write_text("x")
(root / "link").symlink_to(outside)
for folder in (outside, root / "ro" / "deep", root / "ro"):
    folder.chmod(0o555)
release(root)
print(root.exists(), oct(outside.stat().st_mode & 0o777), oct(base.stat().st_mode & 0o777))
outside.chmod(0o755)
"""
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["False", "0o555", "0o755"]
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)

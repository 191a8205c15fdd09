"""The janitor removes its folders even when an untagged process keeps writing into them.

A browser's helper process started with a cleaned environment carries no janitor tag; when a
recorder was killed with SIGKILL it went on writing into its profile while the janitor removed the
folder, and a file survived (a flaky CI failure). The janitor now also kills processes whose
command line names a folder, and retries the removal.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from agentworld.envs.janitor import Janitor


def test_an_untagged_writer_naming_the_folder_is_stopped_and_the_folder_removed(tmp_path: Path) -> None:
    folder = tmp_path / "profile"
    folder.mkdir()
    loop = 'while :; do mkdir -p "$0/Default" && touch "$0/Default/state"; done'
    writer = subprocess.Popen(["sh", "-c", loop, str(folder)])  # no janitor tag in its environment
    try:
        deadline = time.monotonic() + 10
        while not (folder / "Default" / "state").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        with Janitor() as janitor:
            janitor.track(folder)
        assert writer.wait(timeout=10) is not None
        assert not folder.exists()
    finally:
        writer.kill()
        writer.wait()

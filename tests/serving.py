"""Helpers for tests that run a server as a subprocess (not collected: no ``test_`` prefix)."""

from __future__ import annotations

import re
import subprocess
import time

import httpx


def wait_listening(proc: subprocess.Popen[str], pattern: str, health: str, timeout_s: float = 30) -> str:
    """The URL the server announces on stderr (group 1 of ``pattern``), once ``health`` answers.

    ``health`` is a path appended to the URL with its ``/mcp`` or ``/v1`` suffix removed.
    """
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(pattern, line)
    assert match, f"server did not start: {line!r}"
    url = match.group(1)
    base = url.removesuffix("/mcp").removesuffix("/v1")
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            httpx.get(base + health, timeout=1)
            return url
        except httpx.TransportError:
            assert time.monotonic() < deadline, "server not reachable"
            time.sleep(0.05)

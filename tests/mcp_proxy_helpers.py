"""Shared pieces of the ``record mcp`` tests: running the CLI and the servers as real processes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

MAIN = "import sys; from agentworld.cli import main; sys.exit(main())"
"""Runs the ``agentworld`` CLI with this interpreter (no reliance on PATH)."""

TOOLS_PATH = Path(__file__).parent / "fixtures" / "airline_tools.json"


def child_env() -> dict[str, str]:
    return dict(os.environ)


def proxy_cmd(out: Path, *rest: str) -> list[str]:
    return [sys.executable, "-c", MAIN, "record", "mcp", "--out", str(out), *rest]


def upstream_cmd(model_url: str) -> list[str]:
    """Our own streamable-HTTP MCP server (tools of the airline fixture, answered by ``model_url``)."""
    return [sys.executable, "-m", "agentworld", "serve", "mcp", "--tools", str(TOOLS_PATH),
            "--model-base-url", model_url, "--model", "mock", "--transport", "http", "--port", "0"]


@contextmanager
def started_process(command: list[str]) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Start a server subprocess that announces ``listening on URL`` on stderr; yield the URL and it."""
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=child_env())
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"listening on (http://127\.0\.0\.1:\d+/mcp)", line)
        assert match, f"did not start: {line!r}"
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(match.group(1), timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "not reachable"
                time.sleep(0.05)
        yield match.group(1), proc
    finally:
        proc.send_signal(signal.SIGTERM)  # nothing is sent to one already ended and waited for
        proc.wait(timeout=15)


@contextmanager
def started(command: list[str]) -> Iterator[str]:
    with started_process(command) as (url, _):
        yield url

"""Real sandbox tests: isolation of files and network, resource limits, cleanup (no mocks)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from agentworld.envs.sandbox import Sandbox, SandboxConfig, container_id, missing_tools

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(bool(missing_tools()) or shutil.which("tmux") is None,
                       reason=f"needs bubblewrap and tmux (missing: {missing_tools() or ['tmux']})"),
]


def _wait_empty(box: Sandbox, timeout: float = 5.0) -> list[int] | None:
    """The sandbox's own processes once they are gone (or whatever is left after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        left = box.processes()
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def test_identity_and_environment() -> None:
    with Sandbox(seed=7) as box:
        result = box.run("id -u; hostname; pwd; echo $HOME $TZ $LANG; ls /")
    lines = result.stdout.splitlines()
    assert result.returncode == 0, result.stderr
    assert lines[0] == "0"
    assert lines[1] == container_id(7) and len(lines[1]) == 12
    assert lines[2] == "/app"
    assert lines[3] == "/root UTC C.UTF-8"


def test_cannot_write_outside(tmp_path: Path) -> None:
    host_file = tmp_path / "host.txt"
    host_file.write_text("original")
    with Sandbox() as box:
        result = box.run(
            f"echo pwned > {host_file}; echo pwned > {tmp_path}/new.txt; touch /usr/pwned; "
            "touch /etc/pwned; echo x > /bin/pwned; touch /pwned-root; echo inside > /app/ok.txt; "
            "ls /app")
        app_dir = box.app_dir
        assert (app_dir / "ok.txt").read_text() == "inside\n"
    assert "ok.txt" in result.stdout
    assert host_file.read_text() == "original"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["host.txt"]
    for path in ("/usr/pwned", "/etc/pwned", "/bin/pwned", "/pwned-root"):
        assert not os.path.exists(path)
    assert not app_dir.exists(), "the sandbox's host folder is removed on close"


def test_cannot_reach_host_loopback() -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    seen: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, addr = server.accept()
            except (TimeoutError, OSError):
                continue
            seen.append(addr)
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        with Sandbox() as box:
            py = box.run(f"python3 -c \"import urllib.request as u; u.urlopen('http://127.0.0.1:{port}/', "
                         "timeout=2)\"", timeout=20)
            tcp = box.run(f"echo hi > /dev/tcp/127.0.0.1/{port}", timeout=20)
    finally:
        stop.set()
        thread.join(timeout=2)
        server.close()
    assert py.returncode != 0 and "Connection refused" in py.stderr
    assert tcp.returncode != 0
    assert seen == [], "the host server must see no connection"


def test_fork_bomb_is_contained() -> None:
    config = SandboxConfig(max_processes=64, wall_clock_s=3)
    with Sandbox(config) as box:
        result = box.run(":(){ :|:& };:; sleep 10")
        left = _wait_empty(box)
    assert result.timed_out, "the wall clock ended it"
    assert "Resource temporarily unavailable" in result.stderr, "the process limit stopped it"
    subprocess.run(["true"], check=True)  # the host can still start processes
    assert not left, f"processes of the sandbox outlived the run: {left}"


def test_endless_loop_is_stopped_by_cpu_limit() -> None:
    with Sandbox(SandboxConfig(cpu_seconds=1)) as box:
        result = box.run("while :; do :; done", timeout=20)
    assert not result.timed_out and result.returncode != 0
    assert result.elapsed_s < 10


def test_wall_clock_timeout_kills_everything() -> None:
    with Sandbox() as box:
        result = box.run("sleep 100 & sleep 100", timeout=1)
        left = _wait_empty(box)
    assert result.timed_out and result.elapsed_s < 5
    assert not left, f"processes of the sandbox outlived the run: {left}"

"""``agentworld record mcp`` against a hostile server: junk on stdout, detached daemons. Real processes.

Before: in scenario mode every junk line cost a whole SDK traceback on stderr (180 MB of stderr for
4.4 MB of junk); in proxy mode a daemon the server detached with ``setsid`` outlived the recorder.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_mcp_proxy_lifecycle import converse, gone_within, server_alive

from mcp_proxy_helpers import MAIN, child_env, proxy_cmd
from serving import echo_server_loop

HOSTILE = """\
import json, subprocess, sys
pidfile, junk, scrub = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "scrub"
for i in range(junk):
    print(f"junk line {i}: not JSON-RPC", flush=True)
daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)  # hostile-daemon"],
                          start_new_session=True, env={} if scrub else None, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
with open(pidfile, "w") as f:
    f.write(str(daemon.pid))
""" + echo_server_loop("hostile")
"""An MCP server over stdio that floods stdout with junk first and detaches a daemon (pid to argv[1])."""


def _server(tmp_path: Path, junk: int, scrub: bool = False) -> tuple[list[str], Path]:
    script, pidfile = tmp_path / "hostile.py", tmp_path / "daemon.pid"
    script.write_text(HOSTILE)
    return [sys.executable, str(script), str(pidfile), str(junk), "scrub" if scrub else "keep"], pidfile


def _daemon(pidfile: Path) -> int:
    deadline = time.monotonic() + 30
    while not pidfile.exists() or not pidfile.read_text():
        assert time.monotonic() < deadline, "the server never started its daemon"
        time.sleep(0.05)
    return int(pidfile.read_text())


def _kill_leftover(pidfile: Path) -> None:
    if pidfile.exists() and pidfile.read_text():
        pid = int(pidfile.read_text())
        try:
            if b"hostile-daemon" in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def test_scenario_mode_summarises_junk_lines_in_one_warning(tmp_path: Path) -> None:
    server, pidfile = _server(tmp_path, junk=500)
    scenarios = tmp_path / "scenarios.jsonl"
    calls = [{"tool": "echo", "arguments": {"n": i}} for i in range(2)]
    scenarios.write_text(json.dumps({"name": "junk", "server": "memory", "calls": calls}) + "\n")
    out = tmp_path / "rows.jsonl"
    try:
        done = subprocess.run([sys.executable, "-c", MAIN, "record", "mcp", "--scenarios", str(scenarios),
                               "--out", str(out), "--", *server], capture_output=True, text=True,
                              timeout=120, env=child_env())
        assert done.returncode == 0, done.stderr[-2000:]
        assert "Traceback" not in done.stderr
        assert "wrote 500 line(s) to stdout that are not JSON-RPC" in done.stderr
        assert "first: 'junk line 0: not JSON-RPC'" in done.stderr
        assert len(done.stderr) < 2000, f"{len(done.stderr)} characters of stderr"
        assert len(out.read_text().splitlines()) == 2
        assert gone_within(_daemon(pidfile), 30)
    finally:
        _kill_leftover(pidfile)


@pytest.mark.parametrize("scrub", [False, True], ids=["tagged", "scrubbed-environment"])
def test_proxy_mode_ends_the_daemons_a_server_detached(tmp_path: Path, scrub: bool) -> None:
    server, pidfile = _server(tmp_path, junk=0, scrub=scrub)
    proc = subprocess.Popen(proxy_cmd(tmp_path / "rec.jsonl", "--grace-s", "0.3", "--", *server),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=child_env())
    try:
        converse(proc, calls=1)
        daemon = _daemon(pidfile)
        assert server_alive(daemon)
        assert proc.stdin is not None
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
        assert gone_within(daemon, 10), "the detached daemon outlived the recorder"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _kill_leftover(pidfile)


def test_a_sigkilled_proxy_still_ends_the_daemons_a_server_detached(tmp_path: Path) -> None:
    server, pidfile = _server(tmp_path, junk=0)
    proc = subprocess.Popen(proxy_cmd(tmp_path / "rec.jsonl", "--", *server), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env())
    try:
        converse(proc, calls=1)
        daemon = _daemon(pidfile)
        proc.kill()
        proc.wait(timeout=60)
        assert gone_within(daemon, 30), "the detached daemon outlived the killed recorder"
    finally:
        _kill_leftover(pidfile)

"""The runnable examples in examples/ and the piped shell session of docs/guides/simulate.md run offline
as documented."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentworld.envs.sandbox import missing_tools

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def run_example(name: str, timeout_s: float = 60) -> str:
    """Run one example as a user would (from another directory) and return its stdout."""
    proc = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True,
                          timeout=timeout_s, cwd=ROOT.parent, env=dict(os.environ))
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_simulate_python() -> None:
    out = run_example("simulate_python.py")
    assert "turn 1 get_user_details: source=world_model fault=None is_error=False" in out
    assert "Command completed successfully." in out  # the mock world model answered
    assert "turn 3 search_direct_flight: " in out and "fault=rate_limit is_error=True" in out  # schedule [2]
    assert "fault=permission_denied is_error=True" in out  # count 1 on cancel_reservation
    assert "turn 5 get_user_details: source=template fault=None is_error=True" in out
    assert "42 is not of type 'string'" in out  # checked before the model
    assert "faults injected: ['server_error', 'rate_limit', 'permission_denied'" in out
    assert "== terminal world (offline retrieval world model) ==" in out
    assert "# pwd\n/app\n" in out and "source=world_model" in out


def test_mcp_client() -> None:
    pytest.importorskip("mcp")
    out = run_example("mcp_client.py")
    assert "tools: get_user_details, get_reservation_details, search_direct_flight" in out
    assert "valid call   is_error=False: Command completed successfully." in out
    assert "invalid call is_error=True: Error: invalid arguments for tool 'get_user_details'" in out


def test_mcp_episodes() -> None:
    out = run_example("mcp_episodes.py")
    assert "open episodes: 3" in out and "open episodes after DELETE: 0" in out
    assert all(f"episode {i}: Command completed successfully." in out for i in range(3))


def test_http_client() -> None:
    out = run_example("http_client.py")
    assert "session " in out
    assert "step 1: source=world_model fault=None -> Command completed successfully." in out
    assert "step 3: source=template fault=None -> Error: unknown tool 'no_such_tool'" in out
    assert "state: turn=3 faults=" in out
    assert "'closed': True" in out


@pytest.mark.extra("gym")
def test_gym_env() -> None:
    out = run_example("gym_env.py")
    assert "reset: 'root@" in out
    assert "'ls /nope': reward=0.0 source=world_model" in out
    assert "truncated=True" in out and "episode over after 3 turns" in out
    assert "check_env: gymnasium: 2 steps reproducible under seed 0" in out
    assert "gymnasium env_checker: ok" in out


def test_trl_env() -> None:
    out = run_example("trl_env.py")
    assert "def search_direct_flight(self, /, *, origin: str, destination: str, date: str) -> str:" in out
    assert "origin: Origin airport IATA code, such as 'JFK'." in out  # Args: from the inputSchema
    assert "search_direct_flight -> Command completed successfully." in out
    assert "send_certificate -> Error: invalid arguments for tool 'send_certificate'" in out
    assert "reward: 2.0 | sources: ['world_model', 'template']" in out


@pytest.mark.skipif(bool(missing_tools()) or shutil.which("tmux") is None, reason="needs bubblewrap and tmux")
def test_readme_piped_shell() -> None:
    """docs/guides/simulate.md, Shell:
    printf 'echo hi\\nls\\n:state\\n:quit\\n' | agentworld shell --route real"""
    proc = subprocess.run([sys.executable, "-c", "from agentworld.cli import main; main()", "shell",
                           "--route", "real"], input="echo hi\nls\n:state\n:quit\n", capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "# echo hi\n[real]\nhi\n" in proc.stdout
    assert "turn 2, seed 0" in proc.stdout and "cwd /app" in proc.stdout

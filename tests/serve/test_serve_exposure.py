"""Who may reach a server: one rule for an empty token on all three servers, one line for a busy port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr, ValidationError
from starlette.responses import Response

from agentworld.errors import AgentWorldError
from agentworld.serve.config import HttpServeConfig, MockConfig
from agentworld.serve.guard import GuardMiddleware
from agentworld.serve.mock_server import run_mock_server
from agentworld.serve.net import check_exposure

TOOLS = Path(__file__).parents[1] / "fixtures" / "airline_tools.json"
MODEL = ["--model", "mock", "--model-base-url", "http://127.0.0.1:9/v1"]  # never called: nothing starts
SERVERS = {
    "http": ["http", *MODEL],
    "mcp": ["mcp", "--tools", str(TOOLS), "--transport", "http", *MODEL],
    "mock": ["mock"],
}


def serve(*args: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    """``agentworld serve ARGS`` in a child process; a server that starts is killed at the timeout
    (the test then fails on ``TimeoutExpired``, as the old code did by serving)."""
    env = {k: v for k, v in os.environ.items() if k not in ("AGENTWORLD_TOKEN", "AGENTWORLD_MOCK_TOKEN")}
    return subprocess.run([sys.executable, "-m", "agentworld", "serve", *args], capture_output=True,
                          text=True, timeout=timeout_s, env=env, stdin=subprocess.DEVNULL)


def assert_one_red_line(result: subprocess.CompletedProcess[str], expected: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and expected in lines[0], result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_an_empty_token_is_a_user_error_on_every_server(server: str) -> None:
    """``--token ""`` on 0.0.0.0 used to start serving everyone (the guard read it as no token)."""
    result = serve(*SERVERS[server], "--host", "0.0.0.0", "--port", "0", "--token", "", timeout_s=30)
    assert_one_red_line(result, "empty token")
    blank = serve(*SERVERS[server], "--port", "0", "--token", "  ", timeout_s=30)  # loopback too
    assert_one_red_line(blank, "empty token")


def test_mock_server_follows_the_exposure_rule() -> None:
    """``serve mock --host 0.0.0.0`` without a token is refused like the simulator servers."""
    result = serve("mock", "--host", "0.0.0.0", "--port", "0", timeout_s=30)
    assert_one_red_line(result, "--allow-no-token")
    assert "AGENTWORLD_MOCK_TOKEN" in result.stderr


def test_one_definition_of_a_token() -> None:
    with pytest.raises(ValidationError, match="empty token"):
        HttpServeConfig(model="mock", token=SecretStr(""))
    with pytest.raises(ValidationError, match="empty token"):
        MockConfig(token=SecretStr(""))
    with pytest.raises(AgentWorldError, match="empty"):
        GuardMiddleware(Response(), token="", max_body_bytes=1024)
    with pytest.raises(AgentWorldError, match="empty"):
        check_exposure("0.0.0.0", "", allow_no_token=True)
    check_exposure("0.0.0.0", "t0ken", allow_no_token=False)


def test_mock_token_guards_its_log_and_reset() -> None:
    """The request log holds every prompt: with a token set, /_mock/* needs it too."""
    with run_mock_server(MockConfig(token=SecretStr("k-1"))) as url:
        base = url.removesuffix("/v1")
        for method, path in (("GET", "/_mock/requests"), ("GET", "/_mock/stats"), ("POST", "/_mock/reset")):
            assert httpx.request(method, base + path).status_code == 401, path
            ok = httpx.request(method, base + path, headers={"Authorization": "Bearer k-1"})
            assert ok.status_code == 200, path


@pytest.fixture
def busy_port() -> Iterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_a_port_in_use_is_one_line_and_exit_2(server: str, busy_port: int) -> None:
    result = serve(*SERVERS[server], "--port", str(busy_port))
    assert_one_red_line(result, f"port {busy_port} on 127.0.0.1 is already in use")
    assert "--port 0" in result.stderr


def test_an_unknown_host_is_one_line() -> None:
    assert_one_red_line(serve("mock", "--host", "203.0.113.7", "--port", "0", "--token", "t"),
                        "--host 203.0.113.7")

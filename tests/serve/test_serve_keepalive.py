"""Connection resets under load: the servers must keep idle connections longer than clients reuse them.

The bug: ``serve http`` closed idle keep-alive connections after uvicorn's default 5 s, exactly
when httpx stops reusing them; a request sent on a connection at the edge of its life met the
server's close and the kernel answered with a reset (``httpx.ReadError``). Under load (a busy
event loop) the window widened and ``bench_sessions.py --sessions 64`` died reproducibly.
"""

from __future__ import annotations

import asyncio
import http.client
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from agentworld.serve.mock_server import MockConfig, run_mock_server
from serving import wait_listening

CLIENT_EXPIRY_S = httpx.Limits().keepalive_expiry or 5.0
"""How long httpx reuses an idle pooled connection (its default; most Python agents use it)."""

TOOLS = [{"name": "get_user_details", "description": "Get the details of a user.",
          "inputSchema": {"type": "object", "properties": {"user_id": {"type": "string"}},
                          "required": ["user_id"]}}]
SPEC = {"domain": "mcp", "name": "airline", "tools": TOOLS, "initial_state": "An airline booking backend."}


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with run_mock_server(MockConfig()) as url:
        yield url


@contextmanager
def serve_http(mock_url: str, sessions: int) -> Iterator[str]:
    """``agentworld serve http`` in a subprocess (as users run it); yields ``http://127.0.0.1:PORT``."""
    args = ["http", "--model-base-url", mock_url, "--model", "mock", "--port", "0",
            "--max-sessions", str(sessions), "--concurrency", str(sessions)]
    proc = subprocess.Popen([sys.executable, "-m", "agentworld", "serve", *args],
                            stderr=subprocess.PIPE, text=True)
    try:
        url = wait_listening(proc, r"listening on (http://127\.0\.0\.1:\d+)/v1", "/v1/health")
        yield url.removesuffix("/v1")
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_idle_connection_outlives_the_clients_reuse_window(mock_url: str) -> None:
    """A connection idle a little longer than httpx reuses one still answers (no close under the client)."""
    with serve_http(mock_url, 4) as url:
        conn = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]), timeout=10)
        try:
            conn.request("GET", "/v1/health")
            first = conn.getresponse()
            assert first.status == 200 and b'"ok"' in first.read()
            time.sleep(CLIENT_EXPIRY_S + 1)
            conn.request("GET", "/v1/health")  # on the same socket: http.client reconnects only if told
            again = conn.getresponse()
            assert again.status == 200 and b'"ok"' in again.read()
        finally:
            conn.close()


def test_128_sessions_with_think_time_near_the_reuse_window_see_no_errors(mock_url: str) -> None:
    """128 concurrent sessions whose agents pause about as long as httpx reuses a connection: no resets.

    The pauses (spread over the last half second of the client's reuse window) make pooled
    connections sit idle right where the client still reuses them and the old server closed them.
    """
    sessions, steps = 128, 3
    rng = random.Random(13)
    pauses = [[CLIENT_EXPIRY_S - rng.uniform(0.0, 0.5) for _ in range(steps)] for _ in range(sessions)]
    errors: list[str] = []

    async def episode(client: httpx.AsyncClient, i: int) -> None:
        try:
            created = await client.post("/v1/sessions", json={"spec": SPEC, "seed": i})
            sid = created.json()["session_id"]
            for k in range(steps):
                await asyncio.sleep(pauses[i][k])
                r = await client.post(f"/v1/sessions/{sid}/step",
                                      json={"action": {"tool_name": "get_user_details",
                                                       "arguments": {"user_id": f"u{i}x{k}"}}})
                if r.status_code != 200 or r.json()["turn"] != k + 1:
                    errors.append(f"session {i} step {k}: {r.status_code} {r.text[:200]}")
        except httpx.TransportError as exc:
            errors.append(f"session {i}: {exc!r}")

    async def run(url: str) -> None:
        limits = httpx.Limits(max_connections=sessions, max_keepalive_connections=sessions)
        async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
            await asyncio.gather(*(episode(client, i) for i in range(sessions)))

    with serve_http(mock_url, sessions) as url:
        asyncio.run(run(url))
    assert errors == []

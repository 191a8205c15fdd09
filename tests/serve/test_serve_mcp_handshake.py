"""Handshake-era MCP sessions on ``serve mcp --transport http`` (:mod:`agentworld.serve.mcp_handshake`),
spoken as raw JSON-RPC so every status and header is seen; the official client's view of the same
sessions is in ``tests/serve/test_serve_mcp.py`` (``mode="legacy"``) and verl's in
``tests/train/test_verl.py``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from test_serve_mcp import health, http_server, wait_until

from agentworld.serve.mock_server import MockConfig, run_mock_server

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
           "MCP-Protocol-Version": "2025-06-18"}
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with run_mock_server(MockConfig()) as url:
        yield url


def rpc(url: str, body: dict[str, Any], session: str | None = None, **headers: str) -> httpx.Response:
    sent = {**HEADERS, **({"Mcp-Session-Id": session} if session else {}), **headers}
    return httpx.post(url, json=body, headers=sent, timeout=30)


def call(i: int, user: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "get_user_details", "arguments": {"user_id": user}}}


def open_session(url: str) -> str:
    init = rpc(url, INITIALIZE)
    assert init.status_code == 200, init.text
    assert init.json()["result"]["serverInfo"]["name"] == "agentworld-sim"
    session = init.headers["mcp-session-id"]
    assert rpc(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session).status_code == 202
    return session


def test_a_session_from_initialize_to_delete(mock_url: str) -> None:
    with http_server(mock_url) as url:
        session = open_session(url)
        listed = rpc(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, session)
        assert listed.status_code == 200 and listed.headers["mcp-session-id"] == session
        assert "get_user_details" in [t["name"] for t in listed.json()["result"]["tools"]]
        answer = rpc(url, call(2, "raw_1"), session).json()
        assert answer["id"] == 2 and answer["result"]["isError"] is False
        assert health(url)["episodes"] == 1  # the session's own episode

        # The SDK's answers for what is not a well-formed request of an open session:
        unknown = rpc(url, {"jsonrpc": "2.0", "id": 3, "method": "resources/list"}, session).json()
        assert unknown["error"]["code"] == -32601
        bad = rpc(url, {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {}}, session).json()
        assert bad["id"] == 4 and bad["error"]["code"] == -32602
        assert rpc(url, {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}).status_code == 400  # no session
        assert rpc(url, {"jsonrpc": "2.0", "id": 6, "method": "tools/list"}, "f" * 32).status_code == 404
        garbled = httpx.post(url, content=b"{not json", headers={**HEADERS, "Mcp-Session-Id": session})
        assert garbled.status_code == 400 and garbled.json()["error"]["code"] == -32700
        json_only = rpc(url, {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, session,
                        Accept="text/event-stream")
        assert json_only.status_code == 406
        assert httpx.get(url, headers={**HEADERS, "Mcp-Session-Id": session}).status_code == 405

        assert httpx.delete(url, headers={**HEADERS, "Mcp-Session-Id": session}).status_code == 200
        assert wait_until(lambda: health(url)["episodes"] == 0), health(url)
        assert rpc(url, call(8, "raw_late"), session).status_code == 404
        assert httpx.delete(url, headers={**HEADERS, "Mcp-Session-Id": session}).status_code == 404


def test_a_failed_initialize_opens_no_session(mock_url: str) -> None:
    with http_server(mock_url) as url:
        failed = rpc(url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}})
        assert failed.status_code == 200 and failed.json()["error"]["code"] == -32602
        assert "mcp-session-id" not in failed.headers
        open_session(url)  # the server is fine


def test_idle_sessions_end_and_release_their_episode(mock_url: str) -> None:
    with http_server(mock_url, "--idle-timeout-s", "1") as url:
        session = open_session(url)
        assert "result" in rpc(url, call(1, "idle_1"), session).json()
        assert health(url)["episodes"] == 1
        time.sleep(2.5)  # past the timeout, and past a reaper tick
        assert rpc(url, call(2, "idle_2"), session).status_code == 404
        assert health(url)["episodes"] == 0


def test_session_limit_and_concurrent_requests_in_one_session(mock_url: str) -> None:
    with http_server(mock_url, "--max-sessions", "2") as url:
        first, _ = open_session(url), open_session(url)
        refused = rpc(url, INITIALIZE)
        assert refused.status_code == 503 and "mcp-session-id" not in refused.headers

        async def many() -> list[dict[str, Any]]:
            async with httpx.AsyncClient(timeout=30) as client:
                answers = await asyncio.gather(*(client.post(url, json=call(10 + k, f"conc_{k}"), headers={
                    **HEADERS, "Mcp-Session-Id": first}) for k in range(8)))
            return [a.json() for a in answers]

        answers = asyncio.run(many())
        assert [a["id"] for a in answers] == list(range(10, 18))
        assert all(a["result"]["isError"] is False for a in answers)


def test_dns_rebinding_protection_applies_to_sessions(mock_url: str) -> None:
    with http_server(mock_url) as url:
        assert rpc(url, INITIALIZE, Host="evil.example:80").status_code in (403, 421)
        session = open_session(url)
        assert rpc(url, call(1, "rebind"), session, Origin="http://evil.example").status_code == 403
        assert rpc(url, call(2, "rebind"), session).status_code == 200


def test_notifications_cancelled_interrupts_the_request() -> None:
    """As in the SDK's transport: the client's cancel interrupts the step (and its model call)."""
    with run_mock_server(MockConfig(latency_ms=5000)) as slow, http_server(slow) as url:
        session = open_session(url)

        async def cancelled_call() -> tuple[dict[str, Any], float]:
            async with httpx.AsyncClient(timeout=30) as client:
                started = time.monotonic()
                pending = asyncio.ensure_future(client.post(url, json=call(41, "slow"), headers={
                    **HEADERS, "Mcp-Session-Id": session}))
                await asyncio.sleep(0.5)
                cancel = await client.post(url, headers={**HEADERS, "Mcp-Session-Id": session}, json={
                    "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 41}})
                assert cancel.status_code == 202
                answer = await pending
                return answer.json(), time.monotonic() - started

        answer, took = asyncio.run(cancelled_call())
        assert answer == {"jsonrpc": "2.0", "id": 41,
                          "error": {"code": -32800, "message": "Request cancelled"}}
        assert took < 4  # not the model's 5 s
        # a cancel for a request that is not running changes nothing
        assert rpc(url, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},
                   session).status_code == 202

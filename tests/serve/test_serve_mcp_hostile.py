"""``serve mcp --transport http`` against web pages and picky clients: foreign Host/Origin, cross-site
bodies, episode addresses that end in ``/mcp``, and a session's end releasing its episode."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
from mcp import Client
from test_serve_mcp import health, http_server, text_of
from test_serve_mcp_handshake import HEADERS, INITIALIZE, call, rpc

from agentworld.serve.mock_server import MockConfig, run_mock_server


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with run_mock_server(MockConfig()) as url:
        yield url


def test_web_pages_cannot_open_or_close_episodes(mock_url: str) -> None:
    """A page could fill --max-sessions with cross-origin text/plain POSTs (no CORS preflight) or,
    by DNS rebinding, under its own Host name: refused before an episode is opened."""
    with http_server(mock_url, "--allowed-host", "sim.example") as url:
        base = url.removesuffix("/mcp")
        port = base.rsplit(":", 1)[1]
        text = httpx.post(f"{base}/v1/episodes", content=b'{"seed": 1}',
                          headers={"Content-Type": "text/plain"})
        assert text.status_code == 415 and "application/json" in text.text
        page = httpx.post(f"{base}/v1/episodes", headers={"Origin": "http://evil.example"})
        assert page.status_code == 403
        rebound = httpx.post(f"{base}/v1/episodes", json={}, headers={"Host": f"evil.example:{port}"})
        assert rebound.status_code == 421
        assert health(url)["episodes"] == 0
        named = httpx.post(f"{base}/v1/episodes", json={}, headers={"Host": f"sim.example:{port}"})
        assert named.status_code == 200, named.text
        episode = named.json()["episode_id"]
        foreign = httpx.delete(f"{base}/v1/episodes/{episode}", headers={"Host": "evil.example"})
        assert foreign.status_code == 421
        assert httpx.request("DELETE", f"{base}/v1/episodes/{episode}", content=b"x",
                             headers={"Content-Type": "text/plain"}).status_code == 415
        assert health(url)["episodes"] == 1
        assert rpc(url, INITIALIZE, Host=f"sim.example:{port}").status_code == 200  # and /mcp too
        assert httpx.delete(f"{base}/v1/episodes/{episode}").status_code == 200


def test_episode_addresses_end_in_mcp_and_the_old_ones_still_work(mock_url: str) -> None:
    """The MCP Inspector rewrites any URL not ending in /mcp; both addresses reach the same episode."""
    with http_server(mock_url) as url:
        base = url.removesuffix("/mcp")
        created = httpx.post(f"{base}/v1/episodes", json={"seed": 3}).json()
        new, old = created["mcp_url"], f"{base}/mcp/{created['episode_id']}"
        assert new == f"{base}/episodes/{created['episode_id']}/mcp"

        async def run() -> None:
            async with Client(new) as client:
                assert not (await client.call_tool("get_user_details", {"user_id": "first_call"})).is_error
            async with Client(old) as client:
                assert not (await client.call_tool("get_user_details", {"user_id": "second_call"})).is_error
            async with Client(f"{base}/episodes/{'0' * 32}/mcp") as client:
                missing = await client.call_tool("get_user_details", {"user_id": "x"})
                assert missing.is_error and "no open episode" in text_of(missing)

        asyncio.run(run())
        assert health(url)["episodes"] == 1  # one episode, no fresh simulator for either address
        log = httpx.get(f"{mock_url.removesuffix('/v1')}/_mock/requests", params={"full": 1}).json()
        second = next(str(r["messages"]) for r in log if "second_call" in str(r["messages"]))
        assert "first_call" in second  # the old address acted in the same history


def test_ending_an_mcp_session_releases_the_episode_it_acted_in(mock_url: str) -> None:
    """An Inspector-like client (initialize, call, DELETE) on an episode address used to leave the
    simulator open for --idle-timeout-s (1,800 s)."""
    with http_server(mock_url) as url:
        base = url.removesuffix("/mcp")
        address = httpx.post(f"{base}/v1/episodes", json={}).json()["mcp_url"]
        init = rpc(address, INITIALIZE)
        session = init.headers["mcp-session-id"]
        assert rpc(address, call(1, "inspector"), session).json()["result"]["isError"] is False
        assert health(url)["episodes"] == 1
        ended = httpx.delete(address, headers={**HEADERS, "Mcp-Session-Id": session})
        assert ended.status_code == 200
        assert health(url)["episodes"] == 0

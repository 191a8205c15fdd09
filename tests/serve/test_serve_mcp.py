"""The simulated MCP server, driven by the official MCP client over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent
from typer.testing import CliRunner

from agentworld.cli import app as root_app
from agentworld.errors import AgentWorldError, DataError
from agentworld.serve.mock_server import MockConfig, run_mock_server
from agentworld.serve.net import check_exposure, is_loopback
from agentworld.sim.toolfile import check_arguments, load_tools
from serving import wait_listening

TOOLS_PATH = Path(__file__).parents[1] / "fixtures" / "airline_tools.json"
TOOLS = json.loads(TOOLS_PATH.read_text())["tools"]
runner = CliRunner()


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with run_mock_server(MockConfig()) as url:
        yield url


def model_requests(mock_url: str) -> list[dict[str, Any]]:
    return httpx.get(f"{mock_url.removesuffix('/v1')}/_mock/requests", params={"full": 1}).json()


def cli_args(mock_url: str, *extra: str, tools: Path = TOOLS_PATH) -> list[str]:
    return ["-m", "agentworld", "serve", "mcp", "--tools", str(tools),
            "--model-base-url", mock_url, "--model", "mock", "--initial-state", "Airline booking database.",
            *extra]


def child_env() -> dict[str, str]:
    """The test's environment (the SDK otherwise passes a minimal one, without e.g. PYTHONPATH)."""
    return dict(os.environ)


def text_of(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def exercise(client: Client, mock_url: str, user_id: str) -> None:
    """The checks every transport must pass: exact tool list, a simulated call, two error results."""
    listed = (await client.list_tools()).tools
    assert [t.name for t in listed] == [t["name"] for t in TOOLS]
    for tool, expected in zip(listed, TOOLS, strict=True):
        assert tool.description == expected["description"]
        assert tool.input_schema == expected["inputSchema"]

    before = len(model_requests(mock_url))
    result = await client.call_tool("get_user_details", {"user_id": user_id})
    assert not result.is_error
    assert "Command completed successfully." in text_of(result)  # the mock's simulated answer
    new = model_requests(mock_url)[before:]
    assert len(new) == 1 and user_id in json.dumps(new[0]["messages"])

    before = len(model_requests(mock_url))
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("get_user_details", {"user_id": 42}, "42 is not of type 'string'"),
        ("get_user_details", {"user_id": None}, "arguments.user_id: null is not of type 'string'"),
        ("get_user_details", {"user_id": [True]}, "[true] is not of type 'string'"),
        ("get_user_details", {}, "'user_id' is a required property"),
        ("search_direct_flight", {"origin": "JFK", "destination": "LAX", "date": "2024-05-20", "x": 1},
         "Additional properties are not allowed"),
        ("book_spaceship", {"to": "Mars"}, "unknown tool 'book_spaceship'"),
    ]
    for name, args, expected in cases:
        bad = await client.call_tool(name, args)
        assert bad.is_error, (name, args)
        assert expected in text_of(bad), text_of(bad)
    assert len(model_requests(mock_url)) == before  # invalid calls never reach the model


def test_stdio(mock_url: str) -> None:
    params = StdioServerParameters(command=sys.executable, args=cli_args(mock_url), env=child_env())

    async def run() -> None:
        async with Client(params) as client:
            await exercise(client, mock_url, "stdio_user_1")
            await client.call_tool("get_reservation_details", {"reservation_id": "STDIO2"})

    asyncio.run(run())
    last = model_requests(mock_url)[-1]["messages"]
    text = json.dumps(last)
    assert "stdio_user_1" in text and "STDIO2" in text  # one episode: the second call sees the first


@contextmanager
def http_server(mock_url: str, *extra: str, tools: Path = TOOLS_PATH,
                env: dict[str, str] | None = None) -> Iterator[str]:
    """The MCP server as a subprocess on 127.0.0.1 with a free port; yield its /mcp URL."""
    args = cli_args(mock_url, "--transport", "http", "--port", "0", *extra, tools=tools)
    proc = subprocess.Popen([sys.executable, *args], stderr=subprocess.PIPE, text=True,
                            env=env or child_env())
    try:
        yield wait_listening(proc, r"listening on (http://127\.0\.0\.1:\d+/mcp)", "/v1/health")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_streamable_http(mock_url: str) -> None:
    with http_server(mock_url) as url:
        async def run() -> None:
            async with Client(url) as client:  # auto: the 2026-07-28 stateless protocol
                await exercise(client, mock_url, "http_user_1")
            async with Client(url, mode="legacy") as a, Client(url, mode="legacy") as b:
                await exercise(a, mock_url, "legacy_user_a")
                await exercise(b, mock_url, "legacy_user_b")
                await a.call_tool("get_reservation_details", {"reservation_id": "RESA01"})

        asyncio.run(run())
    requests = model_requests(mock_url)
    text_b = json.dumps(next(r["messages"] for r in requests if "legacy_user_b" in json.dumps(r["messages"])))
    assert "legacy_user_a" not in text_b  # each MCP session has its own episode
    last = json.dumps(requests[-1]["messages"])
    assert "RESA01" in last and "legacy_user_a" in last and "legacy_user_b" not in last


def test_load_tools_accepts_both_shapes_and_names_problems(tmp_path: Path) -> None:
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(TOOLS))
    assert [t["name"] for t in load_tools(bare)] == [t["name"] for t in TOOLS]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"tools": [TOOLS[0], {"name": "x", "description": "no schema"}]}))
    with pytest.raises(DataError, match=r"bad\.json \[tool 1\].*inputSchema"):
        load_tools(bad)
    bad.write_text(json.dumps([{"inputSchema": {"type": "object"}}]))
    with pytest.raises(DataError, match=r"\[tool 0\].*'name'"):
        load_tools(bad)
    bad.write_text("{nope")
    with pytest.raises(DataError, match="malformed JSON"):
        load_tools(bad)
    assert check_arguments(TOOLS[0]["inputSchema"], {"user_id": "a"}) is None


def test_cli_reports_bad_tools_file(tmp_path: Path, mock_url: str) -> None:
    bad = tmp_path / "tools.json"
    bad.write_text(json.dumps({"tools": [{"name": "t"}]}))
    args = cli_args(mock_url)
    args[args.index("--tools") + 1] = str(bad)
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "inputSchema" in done.stderr and "tool 0" in done.stderr


def health(url: str) -> dict[str, Any]:
    return httpx.get(url.removesuffix("/mcp") + "/v1/health", timeout=10).json()  # type: ignore[no-any-return]


def wait_until(check: Any, timeout_s: float = 30) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_mcp_sessions_release_their_episodes(mock_url: str) -> None:
    """1,100 handshake-era clients (initialize → call → DELETE) all succeed and leave no simulator open.

    Before, a session's simulator outlived the session until idle expiry (30 min), so from the
    1,025th client on every call failed with "1024 sessions are open". Four lanes of clients, each
    in turn, keep both cores busy; one HTTP connection pool serves them all.
    """
    n, lanes = 1100, 4
    with http_server(mock_url) as url:
        async def lane(first: int, http: httpx2.AsyncClient) -> list[str]:
            failures = []
            for i in range(first, n, lanes):
                async with Client(streamable_http_client(url, http_client=http), mode="legacy",
                                  cache=None) as client:
                    result = await client.call_tool("get_user_details", {"user_id": f"c{i}"})
                    if result.is_error:
                        failures.append(f"client {i}: {text_of(result)}")
            return failures

        async def run() -> list[str]:
            async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120)) as http:
                results = await asyncio.gather(*(lane(k, http) for k in range(lanes)))
            return [failure for failures in results for failure in failures]

        failures = asyncio.run(run())
        assert failures == [], f"{len(failures)} failed, first: {failures[0]}"
        assert wait_until(lambda: health(url)["episodes"] == 0), health(url)


def test_episode_addresses_isolate_stateless_clients(mock_url: str) -> None:
    """32 concurrent stateless clients, each on its own /mcp/<episode>, see only their own history."""
    n = 32
    with http_server(mock_url) as url:
        base = url.removesuffix("/mcp")
        episodes = [httpx.post(f"{base}/v1/episodes", json={"seed": i}).json() for i in range(n)]
        assert health(url)["episodes"] == n
        assert all(e["mcp_url"] == f"{base}/episodes/{e['episode_id']}/mcp" for e in episodes)

        async def play(i: int, mcp_url: str) -> None:
            async with Client(mcp_url) as client:  # the SDK's default: stateless, no session id
                for k in range(2):
                    result = await client.call_tool("get_user_details", {"user_id": f"u{i}x{k}"})
                    assert not result.is_error, text_of(result)

        async def run() -> None:
            await asyncio.gather(*(play(i, e["mcp_url"]) for i, e in enumerate(episodes)))

        before = len(model_requests(mock_url))
        asyncio.run(run())
        requests = [json.dumps(r["messages"]) for r in model_requests(mock_url)[before:]]
        assert len(requests) == 2 * n
        for text in requests:
            owners = {owner for owner, _ in re.findall(r"u(\d+)x(\d)", text)}
            assert len(owners) == 1, f"a model request mixes episodes {sorted(owners)}"
        for i in range(n):  # the second call of an episode is answered with its first in the history
            second = [t for t in requests if f"u{i}x1" in t]
            assert len(second) == 1 and f"u{i}x0" in second[0]

        for e in episodes:
            assert httpx.delete(f"{base}/v1/episodes/{e['episode_id']}").status_code == 200
        assert health(url)["episodes"] == 0
        assert httpx.delete(f"{base}/v1/episodes/{episodes[0]['episode_id']}").status_code == 404

        async def closed() -> CallToolResult:
            async with Client(episodes[0]["mcp_url"]) as client:
                return await client.call_tool("get_user_details", {"user_id": "late"})

        late = asyncio.run(closed())
        assert late.is_error and "POST /v1/episodes" in text_of(late)

        async def shared() -> None:  # plain /mcp without a session: one episode for all such clients
            for user in ("s_first", "s_second"):
                async with Client(url) as client:
                    await client.call_tool("get_user_details", {"user_id": user})

        asyncio.run(shared())
    assert "s_first" in json.dumps(model_requests(mock_url)[-1]["messages"])


def test_limits_arguments_and_patterns(mock_url: str, tmp_path: Path) -> None:
    """Catastrophic patterns run in linear time, big arguments never reach the model, limits name flags."""
    tools = tmp_path / "tools.json"
    match = {"name": "match", "description": "Match a word.", "inputSchema": {
        "type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}}
    tools.write_text(json.dumps({"tools": [*TOOLS, match]}))
    with http_server(mock_url, "--max-argument-bytes", "1024", "--max-sessions", "2", tools=tools) as url:
        base = url.removesuffix("/mcp")

        async def run() -> tuple[CallToolResult, CallToolResult, dict[str, Any]]:
            async with Client(url, mode="legacy") as client:
                slow = asyncio.create_task(client.call_tool("match", {"s": "a" * 40 + "!"}))
                await asyncio.sleep(0)
                during = await asyncio.to_thread(health, url)
                big = await client.call_tool("get_user_details", {"user_id": "u" * 2000})
                return await slow, big, during

        before = len(model_requests(mock_url))
        slow, big, during = asyncio.run(run())
        assert during["status"] == "ok"
        assert slow.is_error and "does not match '^(a+)+$'" in text_of(slow)
        assert big.is_error and "--max-argument-bytes" in text_of(big)
        assert len(model_requests(mock_url)) == before
        for _ in range(2):
            assert httpx.post(f"{base}/v1/episodes").status_code == 200
        full = httpx.post(f"{base}/v1/episodes")
        assert full.status_code == 429 and "--max-sessions" in full.json()["detail"]
        infinite = httpx.post(f"{base}/v1/episodes", content=b'{"seed": 1e400}',
                              headers={"content-type": "application/json"})
        assert infinite.status_code == 422 and "seed" in infinite.json()["detail"]


def test_token_guards_everything_but_health(mock_url: str) -> None:
    token = "s3cret-token-123"
    with http_server(mock_url, env={**child_env(), "AGENTWORLD_TOKEN": token}) as url:
        base = url.removesuffix("/mcp")
        assert httpx.get(f"{base}/v1/health").status_code == 200
        denied = httpx.post(f"{base}/v1/episodes")
        assert denied.status_code == 401 and token not in denied.text
        assert httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 401

        async def run() -> CallToolResult:
            headers = {"Authorization": f"Bearer {token}"}
            async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
                    Client(streamable_http_client(url, http_client=http)) as client:
                return await client.call_tool("get_user_details", {"user_id": "with_token"})

        assert not asyncio.run(run()).is_error


def test_cli_user_errors_are_one_line(tmp_path: Path, mock_url: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTWORLD_TOKEN", raising=False)
    remote = tmp_path / "remote.json"
    remote.write_text(json.dumps([{"name": "t", "inputSchema": {
        "type": "object", "properties": {"s": {"$ref": "http://127.0.0.1:1/x.json"}}}}]))
    bad_control = tmp_path / "control.yaml"
    bad_control.write_text("faults:\n  - kind: truncated\n    rate: 1\n    params: {keep_fraction: -1}\n")
    model = ["--model", "mock", "--model-base-url", mock_url]
    cases = [
        (["mcp", "--tools", str(tmp_path / "missing.json"), *model], "missing.json"),
        (["mcp", "--tools", str(remote), *model], "points outside the schema"),
        (["mcp", "--tools", str(TOOLS_PATH), "--control", str(bad_control), *model], "keep_fraction"),
        (["mcp", "--tools", str(TOOLS_PATH), "--transport", "http", "--host", "0.0.0.0", *model],
         "--allow-no-token"),
        (["http", "--host", "0.0.0.0", *model], "--allow-no-token"),
        (["http", "--model", "no-such-backend"], "unknown world-model backend"),
    ]
    for args, expected in cases:
        result = runner.invoke(root_app, ["serve", *args])
        assert result.exit_code == 2, (args, result.output)
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), (args, result.output)
        assert expected in lines[0], (args, result.output)


def test_exposure_check_allows_loopback_and_warns_when_told(capsys: pytest.CaptureFixture[str]) -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "10.0.0.1", "::", "example.org"))
    check_exposure("0.0.0.0", "t", allow_no_token=False)
    with pytest.raises(AgentWorldError, match="no --token is set"):
        check_exposure("0.0.0.0", None, allow_no_token=False)
    check_exposure("0.0.0.0", None, allow_no_token=True)
    assert "WITHOUT A TOKEN" in capsys.readouterr().err

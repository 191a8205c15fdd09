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
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult, TextContent

from agentworld.errors import DataError
from agentworld.serve.mcp_server import check_arguments, load_tools
from agentworld.serve.mock_server import MockConfig, run_mock_server

TOOLS_PATH = Path(__file__).parent / "fixtures" / "airline_tools.json"
TOOLS = json.loads(TOOLS_PATH.read_text())["tools"]


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with run_mock_server(MockConfig()) as url:
        yield url


def model_requests(mock_url: str) -> list[dict[str, Any]]:
    return httpx.get(f"{mock_url.removesuffix('/v1')}/_mock/requests", params={"full": 1}).json()


def cli_args(mock_url: str, *extra: str) -> list[str]:
    return ["-m", "agentworld.serve.serve_cli", "mcp", "--tools", str(TOOLS_PATH),
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
def http_server(mock_url: str) -> Iterator[str]:
    """The MCP server as a subprocess on 127.0.0.1 with a free port; yield its /mcp URL."""
    proc = subprocess.Popen([sys.executable, *cli_args(mock_url, "--transport", "http", "--port", "0")],
                            stderr=subprocess.PIPE, text=True, env=child_env())
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"listening on (http://127\.0\.0\.1:\d+/mcp)", line)
        assert match, f"server did not start: {line!r}"
        url = match.group(1)
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "server not reachable"
                time.sleep(0.05)
        yield url
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
    with pytest.raises(DataError) as info:
        load_tools(bad)
    assert "bad.json [tool 1]" in str(info.value) and "inputSchema" in str(info.value)
    bad.write_text(json.dumps([{"inputSchema": {"type": "object"}}]))
    with pytest.raises(DataError, match=r"\[tool 0\].*'name'"):
        load_tools(bad)
    bad.write_text("{nope")
    with pytest.raises(DataError, match="not valid JSON"):
        load_tools(bad)
    assert check_arguments(TOOLS[0]["inputSchema"], {"user_id": "a"}) is None


def test_cli_reports_bad_tools_file(tmp_path: Path, mock_url: str) -> None:
    bad = tmp_path / "tools.json"
    bad.write_text(json.dumps({"tools": [{"name": "t"}]}))
    args = cli_args(mock_url)
    args[args.index("--tools") + 1] = str(bad)
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "inputSchema" in done.stderr and "tool 0" in done.stderr

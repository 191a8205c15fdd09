"""``serve mcp --world DIR``: a world folder's tools, served with its entities, to a real MCP client."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import TextContent

from agentworld.serve.mock_server import MockConfig, run_mock_server
from serving import chat_server
from synth_worlds import TASK, WORLD, write


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with run_mock_server(MockConfig()) as url:
        yield url


def requests_seen(mock_url: str) -> list[dict[str, Any]]:
    return httpx.get(f"{mock_url.removesuffix('/v1')}/_mock/requests", params={"full": 1}).json()


def serve_args(mock_url: str, *extra: str) -> list[str]:
    return ["-m", "agentworld", "serve", "mcp", "--model-base-url", mock_url, "--model", "mock", *extra]


async def list_and_call(world: Path, mock_url: str) -> tuple[list[str], str, bool]:
    params = StdioServerParameters(
        command=sys.executable, args=serve_args(mock_url, "--world", str(world)), env=dict(os.environ)
    )
    async with Client(params) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        bad = await client.call_tool("get_reservation_details", {})
        result = await client.call_tool("get_reservation_details", {"reservation_id": "R1"})
        block = result.content[0]
        assert isinstance(block, TextContent)
        return names, block.text, bool(bad.is_error)


def test_a_world_folder_is_listed_and_called_with_its_initial_entities(tmp_path: Path, mock_url: str) -> None:
    world = write(tmp_path, WORLD, [TASK])
    before = len(requests_seen(mock_url))
    names, text, refused = asyncio.run(list_and_call(world, mock_url))
    assert names == [t["name"] for t in WORLD["tools"]]
    assert refused, "arguments are checked against the world's inputSchema"
    assert "Command completed successfully." in text  # the mock world model's answer
    new = requests_seen(mock_url)[before:]
    assert len(new) == 1
    prompt = json.dumps(new[0]["messages"])
    assert "get_reservation_details" in prompt and "window seat" in prompt and "R1" in prompt


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--tools", "x.json", "--world", "w"], "give exactly one of --tools FILE and --world DIR"),
        ([], "give exactly one of --tools FILE and --world DIR"),
        (
            ["--world", "{bad}"],
            "world.json [tool 0], field 'inputSchema': tool 't': invalid inputSchema: "
            "reference 'http://evil.example/schema' points outside the schema",
        ),
    ],
)
def test_bad_world_options_are_one_red_line(tmp_path: Path, extra: list[str], expected: str) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "world.json").write_text(
        json.dumps(
            {
                **WORLD,
                "tools": [
                    {
                        "name": "t",
                        "inputSchema": {
                            "type": "object",
                            "properties": {"a": {"$ref": "http://evil.example/schema"}},
                        },
                    }
                ],
            }
        )
    )
    args = [str(bad) if a == "{bad}" else a for a in extra]
    done = subprocess.run(
        [sys.executable, *serve_args("http://127.0.0.1:9/v1", *args)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and expected in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_http_sessions_name_world_folders_only_inside_the_worlds_root(tmp_path: Path, mock_url: str) -> None:
    from agentworld.serve.config import HttpServeConfig
    from agentworld.serve.http_api import create_app
    from serving import serve

    root = tmp_path / "worlds"
    (root / "airline").mkdir(parents=True)
    write(root / "airline", WORLD, [TASK])
    (tmp_path / "secret").mkdir()
    write(tmp_path / "secret", WORLD, [TASK])
    (root / "link").symlink_to(tmp_path / "secret")
    config = HttpServeConfig(model_base_url=mock_url, model="mock", worlds_root=root)
    with serve(create_app(config)) as url, httpx.Client(base_url=url, timeout=30) as client:
        before = len(requests_seen(mock_url))
        made = client.post("/v1/sessions", json={"world": "airline"})
        assert made.status_code == 200, made.text
        sid = made.json()["session_id"]
        step = client.post(
            f"/v1/sessions/{sid}/step",
            json={"action": {"tool_name": "get_reservation_details", "arguments": {"reservation_id": "R1"}}},
        )
        assert step.status_code == 200, step.text
        prompt = json.dumps(requests_seen(mock_url)[before:][0]["messages"])
        assert "window seat" in prompt and "cancel_reservation" in prompt
        for name in ("../secret", str(tmp_path / "secret"), "link"):
            refused = client.post("/v1/sessions", json={"world": name})
            assert refused.status_code == 422 and "outside the server's worlds root" in refused.text, name
        missing = client.post("/v1/sessions", json={"world": "nope"})
        assert missing.status_code == 422
        assert missing.json()["detail"] == "nope: not a world folder (no such directory)"
        both = client.post("/v1/sessions", json={"world": "airline", "spec": {}})
        assert both.status_code == 422 and "not both" in both.text
    closed = HttpServeConfig(model_base_url=mock_url, model="mock")
    with serve(create_app(closed)) as url, httpx.Client(base_url=url, timeout=30) as client:
        refused = client.post("/v1/sessions", json={"world": "airline"})
        assert refused.status_code == 422 and "--worlds-root" in refused.text


def test_train_rollout_runs_on_a_world_folder_with_its_first_task(tmp_path: Path) -> None:
    """``train rollout --world DIR``: the world's tools and entities, the agent given its first task."""
    seen: dict[str, list[str]] = {"agent": [], "world": []}

    def answer(path: str, body: dict[str, Any], _headers: Any) -> str:
        who = path.split("/")[1]
        seen[who].append(json.dumps(body["messages"]))
        if who == "agent":
            return ('{"tool_name": "cancel_reservation", "arguments": {"reservation_id": "R1"}}'
                    if len(body["messages"]) <= 2 else "All done.")
        return ('<predicted_observation>{"reservation_id": "R1", "status": "cancelled"}'
                "</predicted_observation>")

    world = write(tmp_path, WORLD, [TASK])
    out = tmp_path / "episodes.jsonl"
    with chat_server(answer) as url:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "agentworld",
                "train",
                "rollout",
                "--world",
                str(world),
                "--out",
                str(out),
                "--episodes",
                "1",
                "--max-turns",
                "2",
                "--agent-base-url",
                f"{url}/agent/v1",
                "--agent-model",
                "agent",
                "--model-base-url",
                f"{url}/world/v1",
                "--model",
                "world",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "AGENTWORLD_AGENT_API_KEY": "a", "AGENTWORLD_MODEL_API_KEY": "w"},
        )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["episodes"] == 1
    assert TASK["instruction"] in seen["agent"][0] and "cancel_reservation" in seen["agent"][0]
    assert "window seat" in seen["world"][0] and "R1" in seen["world"][0]

"""One definition of "this observation is an error" (issue 21 §4): the domain's ``error_patterns``.

A world model that answers ``Error: …`` must come back as an error result from the simulated MCP server
(``isError``) and from the HTTP API (``is_error``), exactly as the data pipeline's ``is_error`` counts
it. Driven over real transports: the official MCP client against ``agentworld serve mcp`` over stdio,
and the HTTP API on 127.0.0.1, both asking a real OpenAI-compatible endpoint that answers as scripted.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import TextContent

from agentworld.data import masking, process
from agentworld.domains import failures
from agentworld.serve.config import HttpServeConfig
from agentworld.serve.http_api import create_app
from serving import chat_server, serve

TOOLS_PATH = Path(__file__).parents[1] / "fixtures" / "airline_tools.json"
TOOLS = json.loads(TOOLS_PATH.read_text())["tools"]
FOUND = '{"reservation_id": "ZFA04Y", "status": "confirmed"}'
MISSING = "Error: reservation MISSING1 not found"


def world_model(path: str, body: dict[str, Any], headers: Any) -> str:
    """Answers a missing reservation with an ``Error:`` observation, any other call with a record."""
    asked = body["messages"][-1]["content"]
    text = MISSING if "MISSING1" in asked else FOUND
    return f"<predicted_observation>\n**Environment Observation:**\n{text}\n</predicted_observation>"


def test_the_data_pipeline_and_the_simulator_share_one_definition() -> None:
    assert masking.is_error is failures.is_error and process.error_patterns is failures.error_patterns
    assert failures.is_error(MISSING, "mcp") and not failures.is_error(FOUND, "mcp")


def test_mcp_server_marks_a_model_error_answer_is_error() -> None:
    with chat_server(world_model) as url:
        args = ["-m", "agentworld", "serve", "mcp", "--tools", str(TOOLS_PATH),
                "--model-base-url", f"{url}/v1", "--model", "scripted"]
        params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))

        async def run() -> list[tuple[bool, str]]:
            out = []
            async with Client(params) as client:
                for rid in ("ZFA04Y", "MISSING1"):
                    result = await client.call_tool("get_reservation_details", {"reservation_id": rid})
                    block = result.content[0]
                    assert isinstance(block, TextContent)
                    out.append((bool(result.is_error), block.text))
            return out

        (ok, ok_text), (bad, bad_text) = asyncio.run(run())
    assert ok_text == FOUND and not ok
    assert bad_text == MISSING and bad, "an Error: answer must come back with isError=True"


def test_http_api_marks_a_model_error_answer_is_error() -> None:
    with chat_server(world_model) as model_url:
        config = HttpServeConfig(model_base_url=f"{model_url}/v1", model="scripted")
        with serve(create_app(config)) as url, httpx.Client(base_url=url, timeout=30) as client:
            spec = {"domain": "mcp", "name": "airline", "tools": TOOLS, "initial_state": "Airline backend."}
            sid = client.post("/v1/sessions", json={"spec": spec}).json()["session_id"]
            steps = [client.post(f"/v1/sessions/{sid}/step", json={"action": {
                "tool_name": "get_reservation_details", "arguments": {"reservation_id": rid}}}).json()
                for rid in ("ZFA04Y", "MISSING1")]
    assert steps[0]["observation"] == FOUND and steps[0]["is_error"] is False
    assert steps[1]["observation"] == MISSING and steps[1]["is_error"] is True

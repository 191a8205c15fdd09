"""MCP over HTTP with one address per episode: concurrent RL episodes that never see each other.

    agentworld serve mcp --tools examples/tools/airline_tools.json --transport http --port 8766 \\
        --model-base-url URL --model NAME

POST /v1/episodes {"seed": N} -> {"episode_id", "mcp_url", "observation"}; any MCP client at mcp_url
(here the SDK's default, stateless Client) acts in that episode only; DELETE /v1/episodes/{id}
closes it. Offline, URL is agentworld's mock OpenAI-compatible server (in-process here).

    python examples/mcp_episodes.py
"""

import asyncio
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
from mcp import Client

from agentworld.serve.mock_server import MockConfig, run_mock_server

HERE = Path(__file__).parent


async def episode(index: int, mcp_url: str) -> str:
    async with Client(mcp_url) as client:  # stateless: no MCP session; the address names the episode
        first = await client.call_tool("get_user_details", {"user_id": f"user_{index}"})
        second = await client.call_tool("get_reservation_details", {"reservation_id": f"R{index}"})
    return f"episode {index}: {first.content[0].text} / {second.content[0].text}"


with run_mock_server(MockConfig()) as model_url:
    tools = str(HERE / "tools" / "airline_tools.json")
    server = subprocess.Popen([sys.executable, "-m", "agentworld", "serve", "mcp", "--tools", tools,
                               "--transport", "http", "--port", "0", "--model-base-url", model_url,
                               "--model", "wm"], stderr=subprocess.PIPE, text=True)
    try:
        line = server.stderr.readline()  # "agentworld: listening on http://127.0.0.1:PORT/mcp"
        match = re.search(r"listening on (http://\S+)/mcp", line)
        assert match, f"server did not start: {line!r}"
        api = httpx.Client(base_url=match.group(1), timeout=30)
        for _ in range(200):  # wait until it answers
            try:
                api.get("/v1/health")
                break
            except httpx.TransportError:
                time.sleep(0.05)
        created = [api.post("/v1/episodes", json={"seed": i}).json() for i in range(3)]
        print("open episodes:", api.get("/v1/health").json()["episodes"])

        async def main() -> list[str]:
            return list(await asyncio.gather(*(episode(i, e["mcp_url"]) for i, e in enumerate(created))))

        for line in asyncio.run(main()):
            print(line)
        for e in created:
            api.delete(f"/v1/episodes/{e['episode_id']}")
        print("open episodes after DELETE:", api.get("/v1/health").json()["episodes"])
    finally:
        server.terminate()
        server.wait(timeout=10)

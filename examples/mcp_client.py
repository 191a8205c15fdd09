"""MCP: a world model served as an MCP server, used with the official MCP client (mcp 2.x) over stdio.

The server is the command below; an agent (Claude Desktop, an agent framework, this script) sees
exactly the tools of the JSON file. Arguments are checked against each tool's inputSchema before
the world model is asked, so an invalid call costs nothing and says what was wrong; faults and
facts of the control spec are enforced by the framework.

    agentworld serve mcp --tools examples/tools/airline_tools.json \\
        --control examples/controls/flaky.yaml --model-base-url URL --model NAME

Offline, URL is agentworld's mock OpenAI-compatible server (started here in-process; it answers
"Command completed successfully."). With a real world model, pass its vLLM / SGLang / llama.cpp
URL instead, e.g. --model-base-url http://localhost:8000/v1 --model my-world-model.

    python examples/mcp_client.py
"""

import asyncio
import os
import shutil
import sys
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from agentworld.serve.mock_server import MockConfig, run_mock_server

HERE = Path(__file__).parent
CLI = shutil.which("agentworld", path=str(Path(sys.executable).parent)) or shutil.which("agentworld")


async def main(model_url: str) -> None:
    args = ["serve", "mcp", "--tools", str(HERE / "tools" / "airline_tools.json"),
            "--control", str(HERE / "controls" / "flaky.yaml"),
            "--model-base-url", model_url, "--model", "wm"]
    command, args = (CLI, args) if CLI else (sys.executable, ["-m", "agentworld", *args])
    server = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
        print("tools:", ", ".join(t.name for t in tools))
        ok = await client.call_tool("get_user_details", {"user_id": "mia_li_3668"})
        print(f"valid call   is_error={ok.is_error}: {ok.content[0].text}")
        bad = await client.call_tool("get_user_details", {"user_id": 42})
        print(f"invalid call is_error={bad.is_error}: {bad.content[0].text}")


with run_mock_server(MockConfig()) as url:
    asyncio.run(main(url))

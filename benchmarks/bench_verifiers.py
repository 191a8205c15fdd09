"""Wall time of verifiers rollout groups in the agentworld-sim environment (docs/guides/simulate.md).

The agent is a stub OpenAI-compatible endpoint (one tool call per rollout, then a final answer), the world
model the mock server; both on 127.0.0.1. Prints the load time and each group size's time side by side.

    PYTHONPATH=src python benchmarks/bench_verifiers.py --sizes 8 64
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agentworld.serve.mock_server import MockConfig, run_mock_server
from agentworld.train.verifiers_env import load_environment

TOOL = {"name": "cancel_booking", "description": "Cancel a booking.",
        "inputSchema": {"type": "object", "properties": {"booking_id": {"type": "string"}}}}
WORLD = {"version": 1, "name": "bookings", "scenario": {"service": "bookings"}, "tools": [TOOL]}
TASK = {"id": "t", "instruction": "Cancel booking B1.",
        "success": {"trace": [{"tool": "cancel_booking", "arguments": {"booking_id": "B1"}}]}}


def agent_server() -> ThreadingHTTPServer:
    count = itertools.count()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            message: dict[str, Any] = {"role": "assistant", "content": "Done."}
            if not any(m["role"] == "tool" for m in body["messages"]):
                n = next(count)
                args = json.dumps({"booking_id": "B1" if n % 2 == 0 else "B2"})
                function = {"name": "cancel_booking", "arguments": args}
                call = {"id": f"c{n}", "type": "function", "function": function}
                message = {"role": "assistant", "content": None, "tool_calls": [call]}
            usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
            data = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "agent",
                               "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                               "usage": usage}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        request_queue_size = 1024  # the default backlog of 5 resets connections of a large group

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 64])
    args = parser.parse_args()
    from verifiers.clients import OpenAIChatCompletionsClient
    from verifiers.types import ClientConfig

    with tempfile.TemporaryDirectory() as tmp, run_mock_server(MockConfig()) as mock_url:
        world = Path(tmp)
        (world / "world.json").write_text(json.dumps(WORLD))
        (world / "tasks.jsonl").write_text(json.dumps(TASK) + "\n")
        server = agent_server()
        agent_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        client = OpenAIChatCompletionsClient(ClientConfig(api_base_url=agent_url, api_key_var="NO_KEY",
                                                          max_retries=0))
        start = time.perf_counter()
        env = load_environment(str(world), model_base_url=mock_url, model="mock")
        print(f"load_environment (imports verifiers): {time.perf_counter() - start:.2f} s")
        row = env.get_dataset()[0]
        print("group  seconds  mean_reward  errors")
        for n in args.sizes:
            start = time.perf_counter()
            outputs = asyncio.run(env.run_group([{**row, "example_id": 0}] * n, client, "agent", {}))
            took = time.perf_counter() - start
            mean = sum(o["reward"] for o in outputs) / n
            errors = sum(o["error"] is not None for o in outputs)
            print(f"{n:5d}  {took:7.2f}  {mean:11.2f}  {errors:6d}")
        server.shutdown()


if __name__ == "__main__":
    main()

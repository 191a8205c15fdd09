"""Helpers for tests that run servers: a subprocess server's URL, a stub chat endpoint (not collected)."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from agentworld.serve.net import bind_tcp, uvicorn_config

FIXTURES = Path(__file__).resolve().parent / "fixtures"
"""The shared test fixtures (tests/fixtures), wherever a test file sits below tests/."""


def wait_listening(proc: subprocess.Popen[str], pattern: str, health: str, timeout_s: float = 30) -> str:
    """The URL the server announces on stderr (group 1 of ``pattern``), once ``health`` answers.

    ``health`` is a path appended to the URL with its ``/mcp`` or ``/v1`` suffix removed.
    """
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(pattern, line)
    assert match, f"server did not start: {line!r}"
    url = match.group(1)
    base = url.removesuffix("/mcp").removesuffix("/v1")
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            httpx.get(base + health, timeout=1)
            return url
        except httpx.TransportError:
            assert time.monotonic() < deadline, "server not reachable"
            time.sleep(0.05)


@contextlib.contextmanager
def chat_server(answer: Callable[[str, dict[str, Any], Any], str | dict[str, Any]]) -> Iterator[str]:
    """A real OpenAI-compatible chat endpoint on 127.0.0.1 whose reply text is ``answer(path, body,
    headers)`` (``headers`` looked up case-insensitively; a dict answer is the whole message, e.g. with
    ``tool_calls``); yields its base URL without ``/v1``, so callers can route by path (``/agent/v1``,
    ``/world/v1``)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            content = answer(self.path, body, self.headers)
            message = content if isinstance(content, dict) else {"role": "assistant", "content": content}
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
            data = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                               "choices": [{"index": 0, "finish_reason": finish, "message": message}],
                               "usage": usage}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def echo_server_loop(name: str) -> str:
    """Python source of a minimal stdio MCP server's request loop (initialize, one ``echo`` tool,
    ``tools/call`` echoing its arguments), for stub server scripts that add behaviour before or after it."""
    return f'''for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {{"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {{"tools": {{}}}},
                  "serverInfo": {{"name": "{name}", "version": "1"}}}}
    elif msg["method"] == "tools/list":
        result = {{"tools": [{{"name": "echo", "inputSchema": {{"type": "object"}}}}]}}
    else:
        result = {{"content": [{{"type": "text", "text": "echo " + json.dumps(msg["params"]["arguments"])}}]}}
    print(json.dumps({{"jsonrpc": "2.0", "id": msg["id"], "result": result}}), flush=True)
'''

TOOLS = json.loads((FIXTURES / "airline_tools.json").read_text())["tools"]
SPEC = {"domain": "mcp", "name": "airline", "tools": TOOLS, "initial_state": "An airline booking backend."}


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_name": tool, "arguments": arguments}


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Run an ASGI app with its lifespan in a thread on 127.0.0.1; yield its base URL."""
    import uvicorn

    server = uvicorn.Server(uvicorn_config(app))
    sock = bind_tcp("127.0.0.1", 0)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server failed to start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()

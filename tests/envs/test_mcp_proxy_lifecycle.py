"""``agentworld record mcp`` when things go wrong: a server that will not stop, a proxy killed with
SIGKILL (stdio and HTTP), an output file left without its last newline. Real processes throughout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from agentworld.data.ingest import ingest
from agentworld.envs.mcp_proxy_http import SseParser
from agentworld.io import dropped_path, read_journal
from agentworld.serve.mock_server import MockConfig, run_mock_server
from mcp_proxy_helpers import child_env, proxy_cmd, started, started_process, upstream_cmd
from serving import echo_server_loop

STUBBORN = """\
import json, os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
""" + echo_server_loop("stubborn") + """while True:
    time.sleep(3600)
"""
"""An MCP server over stdio that ignores SIGTERM and the end of its input; writes its pid to argv[1]."""

HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


@contextmanager
def stubborn_proxy(tmp_path: Path, *options: str) -> Iterator[tuple[subprocess.Popen[bytes], Path, Path]]:
    """The proxy around :data:`STUBBORN`; yields it, its output file and the server's pid file.

    Whatever happens, a server left alive is killed at the end (it is ours: its command names the script).
    """
    script, pidfile, out = tmp_path / "stubborn.py", tmp_path / "server.pid", tmp_path / "rec.jsonl"
    script.write_text(STUBBORN)
    command = proxy_cmd(out, *options, "--", sys.executable, str(script), str(pidfile))
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=child_env())
    try:
        yield proc, out, pidfile
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        pid = int(pidfile.read_text()) if pidfile.exists() else None
        if pid is not None and server_alive(pid) and str(script) in _cmdline(pid):
            os.kill(pid, signal.SIGKILL)


def converse(proc: subprocess.Popen[bytes], calls: int) -> list[dict[str, Any]]:
    """Initialize, list tools and make ``calls`` tool calls over the proxy's pipes; the call replies."""
    assert proc.stdin is not None and proc.stdout is not None
    messages = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]
    messages += [{"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                  "params": {"name": "echo", "arguments": {"n": i}}} for i in range(calls)]
    for message in messages:
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
    replies = [json.loads(proc.stdout.readline()) for _ in range(2 + calls)]
    return replies[2:]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def server_alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie nobody has reaped yet counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while server_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def assert_three_echo_calls(out: Path, transport: str) -> None:
    """The file holds three rows (written as each call was answered), read back as one trajectory."""
    assert [r["turn_idx"] for r in read_journal(out)] == [1, 2, 3]
    (traj,) = ingest(out)
    assert len(traj.turns) == 3 and traj.meta["transport"] == transport and traj.meta["calls"] == 3


def test_server_ignoring_eof_and_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    with stubborn_proxy(tmp_path, "--grace-s", "0.2") as (proc, out, pidfile):
        replies = converse(proc, calls=3)
        texts = [r["result"]["content"][0]["text"] for r in replies]
        assert texts == [f'echo {{"n": {i}}}' for i in range(3)]
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.close()                  # the client is done: EOF, then SIGTERM, are both ignored
        assert proc.wait(timeout=120) == 128 + signal.SIGKILL
        stderr = proc.stderr.read().decode()
        assert "sending SIGTERM" in stderr and "killing it" in stderr and "recorded 3 tool call(s)" in stderr
        assert gone_within(int(pidfile.read_text()), 30)
    assert_three_echo_calls(out, "stdio")


def test_sigkilled_stdio_proxy_takes_its_server_along_and_keeps_answered_calls(tmp_path: Path) -> None:
    with stubborn_proxy(tmp_path) as (proc, out, pidfile):
        converse(proc, calls=3)
        proc.kill()
        proc.wait(timeout=60)
        assert gone_within(int(pidfile.read_text()), 30)
    assert_three_echo_calls(out, "stdio")
    (traj,) = ingest(out)
    assert [t.observation for t in traj.turns] == [
        f'**Environment Observation:**\necho {{"n": {i}}}' for i in range(3)]
    assert traj.meta["server"]["name"] == "stubborn" and '"name": "echo"' in traj.system_prompt


def _post(client: httpx.Client, url: str, message: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
    accept = {"accept": "application/json, text/event-stream"}
    return client.post(url, json=message, headers={**accept, **headers})


def _reply(response: httpx.Response) -> dict[str, Any]:
    if response.headers["content-type"].startswith("text/event-stream"):
        parser = SseParser()
        (message,) = [*parser.feed(response.content), *parser.end()]
        return message
    return dict(response.json())


def test_sigkilled_http_proxy_keeps_answered_calls(tmp_path: Path) -> None:
    out = tmp_path / "rec.jsonl"
    with run_mock_server(MockConfig()) as mock_url, started(upstream_cmd(mock_url)) as upstream, \
            started_process(proxy_cmd(out, "--url", upstream, "--listen-port", "0")) as (url, proc), \
            httpx.Client(timeout=60) as client:
        init = _post(client, url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO}, {})
        headers = {"mcp-protocol-version": _reply(init)["result"]["protocolVersion"]}
        if "mcp-session-id" in init.headers:
            headers["mcp-session-id"] = init.headers["mcp-session-id"]
        _post(client, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
        for i in range(3):
            call = {"jsonrpc": "2.0", "id": 1 + i, "method": "tools/call",
                    "params": {"name": "get_user_details", "arguments": {"user_id": f"u{i}"}}}
            assert "result" in _reply(_post(client, url, call, headers))
        proc.kill()
        proc.wait(timeout=60)
    assert_three_echo_calls(out, "streamable-http")


def test_record_mcp_keeps_a_last_row_missing_its_newline(tmp_path: Path) -> None:
    from agentworld.outputs import claim_file, release_all

    out = tmp_path / "s.jsonl"
    claim_file(out)  # an earlier recording of ours (its mark beside it) ...
    out.write_text('{"a":1}\n{"b":2}')          # ... whose last row lost its newline
    release_all()
    server = [sys.executable, "-c", "import sys; sys.stdin.read()"]
    done = subprocess.run(proxy_cmd(out, "--", *server), input=b"", capture_output=True, timeout=120)
    assert done.returncode == 0
    assert out.read_text() == '{"a":1}\n{"b":2}\n' and not dropped_path(out).exists()


def test_a_json_answer_is_recorded_before_its_last_byte_reaches_the_client(tmp_path: Path) -> None:
    """A JSON body carries a Content-Length, so the client is done at its last byte, before the end of
    the ASGI body: the call must be in the file before any byte of the answer is sent (a SIGKILL
    right after the client read it kept 2 of 3 calls in CI)."""
    import asyncio

    from agentworld.domains.mcp.rows import ROWS
    from agentworld.envs.mcp_proxy import TrajectorySink
    from agentworld.envs.mcp_proxy_http import RecordingProxy

    answer = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "ok " * 5000}]}}

    body = json.dumps(answer).encode()

    class Chunks(httpx.AsyncByteStream):
        async def __aiter__(self) -> Any:
            yield body[:100]
            yield body[100:]

    def upstream(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "application/json",
                                            "content-length": str(len(body))}, stream=Chunks())

    events: list[str] = []
    out = tmp_path / "rec.jsonl"
    sink = TrajectorySink(out)
    proxy = RecordingProxy("http://upstream.invalid/mcp", sink, layout=ROWS)
    proxy.client = httpx.AsyncClient(transport=httpx.MockTransport(upstream))
    flush = sink.flush

    def noting_flush(recorder: Any) -> None:
        flush(recorder)
        events.append(f"rows={len(out.read_text().splitlines())}")

    sink.flush = noting_flush  # type: ignore[method-assign]
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {}}}

    async def run() -> None:
        messages = [{"type": "http.request", "body": json.dumps(call).encode(), "more_body": False}]

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop(0)
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message.get("body"):
                events.append(f"body rows={len(out.read_text().splitlines()) if out.exists() else 0}")

        scope = {"type": "http", "method": "POST", "path": "/mcp", "query_string": b"",
                 "headers": [(b"content-type", b"application/json")]}
        await proxy(scope, receive, send)
        await proxy.client.aclose()

    asyncio.run(run())
    sink.close()
    bodies = [e for e in events if e.startswith("body")]
    assert bodies and all(e == "body rows=1" for e in bodies), events

"""``record mcp`` over HTTP keeps at most the cap of one answer: larger ones are relayed whole, not recorded.

The proxy relays a recorded server's answers chunk by chunk, but its recorder used to collect a
JSON body whole and an event stream until each blank line: a server answering without end (or with
one ``data:`` line without end) grew the proxy without bound.
"""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentworld.domains.mcp.rows import ROWS
from agentworld.envs.mcp_proxy import TrajectorySink
from agentworld.envs.mcp_proxy_http import JsonBody, RecordingProxy, SseParser

LIMIT = 256 * 1024


def test_an_event_stream_without_line_ends_is_held_to_the_cap() -> None:
    parser = SseParser(limit=LIMIT)
    piece = b"x" * 65536
    tracemalloc.start()
    try:
        parser.feed(b"data: ")
        for _ in range(320):  # 20 MiB of one line
            assert parser.feed(piece) == []
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * LIMIT
    event = {"jsonrpc": "2.0", "id": 7, "result": {}}
    messages = parser.feed(b"\n\n" + b"data: " + json.dumps(event).encode() + b"\n\n")
    assert messages == [event] and parser.dropped == 1  # the next event is read again


def test_an_event_of_many_data_lines_is_dropped_past_the_cap() -> None:
    parser = SseParser(limit=LIMIT)
    line = b"data: " + b"y" * 1000 + b"\n"
    assert parser.feed(line * 1000) == []  # 1 MB in one event
    assert parser.feed(b"\n") == [] and parser.dropped == 1
    assert parser.feed(b'data: {"jsonrpc": "2.0", "id": 1, "result": {}}\n\n') == [
        {"jsonrpc": "2.0", "id": 1, "result": {}}]


def test_a_json_body_past_the_cap_holds_nothing_more() -> None:
    body = JsonBody(limit=1000)
    body.feed(b"{" * 600)
    assert not body.over
    body.feed(b"{" * 600)
    assert body.over and body.take() == b"{" * 1200 and body.end() == []


def test_a_json_answer_larger_than_the_cap_reaches_the_client_whole_and_unrecorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("AGENTWORLD_MAX_RESPONSE_BYTES", str(LIMIT))
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "z" * 3_000_000}]}}
    body = json.dumps(answer).encode()

    class Chunks(httpx.AsyncByteStream):
        async def __aiter__(self) -> Any:
            for start in range(0, len(body), 65536):
                yield body[start:start + 65536]

    def upstream(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "application/json",
                                            "content-length": str(len(body))}, stream=Chunks())

    out = tmp_path / "rec.jsonl"
    sink = TrajectorySink(out)
    proxy = RecordingProxy("http://upstream.invalid/mcp", sink, layout=ROWS)
    proxy.client = httpx.AsyncClient(transport=httpx.MockTransport(upstream))
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {}}}
    received = bytearray()

    async def run() -> None:
        messages = [{"type": "http.request", "body": json.dumps(call).encode(), "more_body": False}]

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop(0)
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            received.extend(message.get("body", b""))

        scope = {"type": "http", "method": "POST", "path": "/mcp", "query_string": b"",
                 "headers": [(b"content-type", b"application/json")]}
        await proxy(scope, receive, send)
        await proxy.client.aclose()

    asyncio.run(run())
    proxy.flush()
    sink.close()
    assert bytes(received) == body  # the client sees exactly what the server sent
    assert "larger than 262,144 bytes: relayed, not recorded" in capsys.readouterr().err
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    assert not any("z" * 1000 in json.dumps(row) for row in rows)

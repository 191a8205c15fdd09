"""The streamable-HTTP side of ``agentworld record mcp``: a recording reverse proxy on 127.0.0.1.

Why a raw ASGI app: every request is forwarded as received (method, path, query, headers, body)
and every response is sent back as received (status, headers such as ``Mcp-Session-Id``, body
bytes, SSE streams chunk by chunk as they arrive); no framework may rewrite or buffer them. The
recorder only reads copies: JSON-RPC messages from request bodies and from JSON or SSE ``data:``
lines of responses.

Sessions are told apart by ``Mcp-Session-Id``; each answered call is written before the chunk
that completes its answer is relayed, and a session is reported when its client ends it with
``DELETE`` or when the proxy stops. Requests without a session (the stateless protocol) are
recorded as one trajectory per proxy run. Rows of concurrent sessions interleave in the file;
each row names its trajectory, and the ``recording`` ingest format groups them.

What the recorder keeps of one answer is capped (:func:`agentworld.http_limits.max_response_bytes`,
``$AGENTWORLD_MAX_RESPONSE_BYTES``): a JSON body or one server-sent event larger than that is still
relayed to the client, chunk by chunk, but not recorded (with one warning), so a server that
answers without end cannot grow the proxy's memory; the relay itself holds one chunk at a time.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from agentworld.envs.loopback import KEEP_ALIVE_S
from agentworld.envs.mcp_proxy import RowLayout, SessionRecorder, TrajectorySink, clock, log, rpc_messages
from agentworld.http_limits import max_response_bytes

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

SESSION_HEADER = "mcp-session-id"
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                        "trailer", "transfer-encoding", "upgrade", "host", "content-length"})
"""Request headers not forwarded as-is (per hop, or recomputed for the same body)."""
RESPONSE_HOP_BY_HOP = HOP_BY_HOP - {"content-length"}


class SseParser:
    """Collects the ``data:`` fields of server-sent events into JSON-RPC messages.

    An event (or a line) longer than ``limit`` bytes is dropped whole: what it held so far is let go
    and the rest of it is skipped up to the blank line that ends it; :attr:`dropped` counts them.
    """

    def __init__(self, limit: int | None = None) -> None:
        self.limit = max_response_bytes(limit)
        self.dropped = 0
        self._buffer = bytearray()
        self._data: list[bytes] = []
        self._size = 0
        self._skipping = False

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """The messages of every event the chunk completes (an event ends at a blank line)."""
        self._buffer += chunk
        out: list[dict[str, Any]] = []
        while (end := self._buffer.find(b"\n")) != -1:
            line = bytes(self._buffer[:end]).rstrip(b"\r")
            del self._buffer[:end + 1]
            if not line:
                out.extend(self.end())
            elif line.startswith(b"data:") and not self._skipping:
                value = line[5:]
                self._data.append(value[1:] if value.startswith(b" ") else value)
                self._size += len(value)
                if self._size > self.limit:
                    self._drop()
        if len(self._buffer) > self.limit:  # a line without end
            self._buffer.clear()
            self._drop()
        return out

    def _drop(self) -> None:
        if not self._skipping:
            self.dropped += 1
        self._data, self._size, self._skipping = [], 0, True

    def end(self) -> list[dict[str, Any]]:
        """Dispatch the pending event (at a blank line or the end of the stream)."""
        data, self._data, self._size = self._data, [], 0
        if self._skipping:
            self._skipping = False
            return []
        return rpc_messages(b"\n".join(data)) if data else []


class JsonBody:
    """Collects a JSON response body, up to ``limit`` bytes; its messages are read at the end.

    Past the limit it holds nothing more (:attr:`over` is set): the relay sends what it held
    (:meth:`take`) and the rest as it comes, and the answer is not recorded.
    """

    def __init__(self, limit: int | None = None) -> None:
        self.limit = max_response_bytes(limit)
        self.over = False
        self._body = bytearray()

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        self._body += chunk
        self.over = len(self._body) > self.limit
        return []

    def take(self) -> bytes:
        """What was held, let go of."""
        body, self._body = bytes(self._body), bytearray()
        return body

    def end(self) -> list[dict[str, Any]]:
        return rpc_messages(bytes(self._body)) if self._body and not self.over else []

    @property
    def body(self) -> bytes:
        return bytes(self._body)


def _response_parser(response: httpx.Response) -> SseParser | JsonBody | None:
    """How to read the response's messages; ``None`` when they cannot be read (compressed, not JSON)."""
    if response.headers.get("content-encoding", "identity") != "identity":
        return None
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "text/event-stream":
        return SseParser()
    return JsonBody() if kind == "application/json" else None


async def _read_body(receive: Receive) -> bytes:
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ConnectionError("client went away before sending its request")
        body += message.get("body", b"")
        if not message.get("more_body"):
            return bytes(body)


async def _until_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


class RecordingProxy:
    """The ASGI app: forwards to ``url`` and feeds one :class:`SessionRecorder` per MCP session."""

    def __init__(self, url: str, sink: TrajectorySink, *, layout: RowLayout, name: str | None = None) -> None:
        self.url = url
        self.layout = layout
        self.sink = sink
        self.name = name
        parts = urlsplit(url)
        self._origin = f"{parts.scheme}://{parts.netloc}"
        self.path = parts.path or "/"
        self.sessions: dict[str, SessionRecorder] = {}
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=10.0))

    def _target(self, scope: Scope) -> str:
        """The upstream URL: ``--url`` for its own path, the same origin for any other path."""
        path = scope.get("path", "/")
        query = scope.get("query_string", b"").decode("latin-1")
        base = self.url.split("?")[0] if path == self.path else self._origin + path
        return f"{base}?{query}" if query else base

    def recorder(self, session_id: str) -> SessionRecorder:
        if session_id not in self.sessions:
            self.sessions[session_id] = SessionRecorder(
                self.layout, name=self.name, meta={"transport": "streamable-http", "server_url": self.url,
                                      "session_id": session_id or None})
        return self.sessions[session_id]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        try:
            body = await _read_body(receive)
        except ConnectionError:
            return
        headers = [(k, v) for k, v in scope["headers"] if k.decode("latin-1").lower() not in HOP_BY_HOP]
        request = httpx.Request(scope["method"], self._target(scope), headers=headers, content=body)
        sent = [(m, clock()) for m in rpc_messages(body)] if body else []
        try:
            response = await self.client.send(request, stream=True)
        except httpx.HTTPError as exc:
            await _plain(send, 502, f"agentworld record mcp: upstream {self.url} failed: {exc}\n")
            return
        session_id = request.headers.get(SESSION_HEADER) or response.headers.get(SESSION_HEADER) or ""
        recorder = self.recorder(session_id)
        for message, when in sent:
            recorder.from_client(message, when=when)
        if scope["method"] == "DELETE" and session_id and response.status_code < 400:
            # Finished before the reply is relayed, so the file is complete once the client is told.
            await asyncio.to_thread(self.sink.finish, self.sessions.pop(session_id))
        streaming = asyncio.ensure_future(self._relay(response, send, recorder))
        watching = asyncio.ensure_future(_until_disconnect(receive))
        try:
            await asyncio.wait({streaming, watching}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (streaming, watching):
                task.cancel()
            await asyncio.gather(streaming, watching, return_exceptions=True)
            await response.aclose()

    async def _relay(self, response: httpx.Response, send: Send, recorder: SessionRecorder) -> None:
        """Send the upstream response back byte for byte, recording the messages it carries."""
        headers = [(k, v) for k, v in response.headers.raw if k.decode("latin-1").lower() not in
                   RESPONSE_HOP_BY_HOP]
        await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
        parser = _response_parser(response)
        if isinstance(parser, JsonBody):
            # A JSON body has a Content-Length: the client has the answer with its last byte, before
            # the end of the ASGI body. So the whole body is read and recorded before any of it goes
            # (up to the cap; a larger one is relayed as it comes and not recorded).
            async for chunk in response.aiter_raw():
                if parser.over:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    continue
                parser.feed(chunk)
                if parser.over:
                    log(f"an answer of {self.url} is larger than {parser.limit:,} bytes: relayed, not "
                        "recorded")
                    await send({"type": "http.response.body", "body": parser.take(), "more_body": True})
            await self._record(recorder, parser.end())
            await send({"type": "http.response.body", "body": parser.body, "more_body": False})
            return
        async for chunk in response.aiter_raw():
            await self._record(recorder, parser.feed(chunk) if parser else [])
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await self._record(recorder, parser.end() if parser else [])
        if parser is not None and parser.dropped:
            log(f"{parser.dropped} event(s) of an answer of {self.url} were larger than {parser.limit:,} "
                "bytes: relayed, not recorded")
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _record(self, recorder: SessionRecorder, messages: list[dict[str, Any]]) -> None:
        """Note server messages; write the calls they answered (before the client sees them)."""
        answered = [recorder.from_server(m) for m in messages]
        if any(answered):
            await asyncio.to_thread(self.sink.flush, recorder)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """Finish open sessions at shutdown, inside the server: uvicorn re-raises SIGTERM after it."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await asyncio.to_thread(self.flush)
                await self.client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def flush(self) -> None:
        """Finish every session still open (the proxy is stopping)."""
        for session_id in list(self.sessions):
            self.sink.finish(self.sessions.pop(session_id))


async def _plain(send: Send, status: int, text: str) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
    await send({"type": "http.response.body", "body": text.encode()})


def run_http_proxy(url: str, out: str | Path, *, layout: RowLayout, name: str | None = None,
                   listen_port: int = 0) -> int:
    """Serve the recording proxy on 127.0.0.1 until SIGINT/SIGTERM; return the exit code.

    The socket is bound first so ``listen_port=0`` works: the printed URL has the chosen port and
    the path of ``url``, so a client just swaps the address.
    """
    import uvicorn

    sink = TrajectorySink(out)
    proxy = RecordingProxy(url, sink, layout=layout, name=name)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", listen_port))
    except OSError as exc:
        sink.close()
        log(f"cannot listen on 127.0.0.1:{listen_port}: {exc}")
        return 2
    port = sock.getsockname()[1]
    log(f"recording proxy for {url} listening on http://127.0.0.1:{port}{proxy.path}")
    config = uvicorn.Config(proxy, lifespan="on", log_level="warning", server_header=False,
                            date_header=False, timeout_graceful_shutdown=3, timeout_keep_alive=KEEP_ALIVE_S)

    async def serve() -> None:
        try:
            await uvicorn.Server(config).serve(sockets=[sock])
        finally:
            await proxy.client.aclose()

    try:
        asyncio.run(serve())
    finally:
        sock.close()
        try:
            proxy.flush()
        finally:
            sink.close()
    return 0

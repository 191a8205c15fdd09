"""A real HTTP server on 127.0.0.1 that answers as a broken or hostile one would, and counts what it is asked.

Raw sockets, not ``http.server``: the answers a client must survive are the ones a well-behaved
framework cannot send — a body without end (chunked, or read until close), a ``Content-Length``
that lies, header lines without end, a gzip stream that expands without end, bytes that are not
HTTP. Each route maps to an :data:`Answer`, a function that writes the whole reply to the socket
(until the client hangs up); every request is recorded in :attr:`HostileServer.hits`.
"""

from __future__ import annotations

import contextlib
import json
import socket
import socketserver
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

Answer = Callable[[socket.socket], None]
"""Writes one reply to the client's socket (may write forever: it stops when the client hangs up)."""

ENDLESS_S = 60.0
"""The longest an endless answer runs (so a client that never stops cannot keep a test thread)."""
CHUNK = b"x" * 65536


def _head(status: int = 200, headers: dict[str, str] | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Oops'}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items() if k != "Connection"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _forever(sock: socket.socket, piece: Callable[[], bytes]) -> None:
    deadline = time.monotonic() + ENDLESS_S
    with contextlib.suppress(OSError):
        while time.monotonic() < deadline:
            sock.sendall(piece())


def json_answer(body: Any, status: int = 200) -> Answer:
    """A well-formed JSON reply."""
    data = json.dumps(body).encode()

    def write(sock: socket.socket) -> None:
        head = _head(status, {"Content-Type": "application/json", "Content-Length": str(len(data))})
        sock.sendall(head + data)

    return write


def raw_answer(data: bytes, status: int = 200, content_type: str = "application/json") -> Answer:
    """A reply of exactly ``data`` (any bytes) with a true Content-Length."""

    def write(sock: socket.socket) -> None:
        sock.sendall(_head(status, {"Content-Type": content_type, "Content-Length": str(len(data))}) + data)

    return write


def endless_chunked(content_type: str = "application/json", status: int = 200) -> Answer:
    """``Transfer-Encoding: chunked`` with no last chunk: 64 KiB chunks until the client hangs up."""
    frame = f"{len(CHUNK):x}\r\n".encode() + CHUNK + b"\r\n"

    def write(sock: socket.socket) -> None:
        sock.sendall(_head(status, {"Content-Type": content_type, "Transfer-Encoding": "chunked"}))
        _forever(sock, lambda: frame)

    return write


def endless_sse(line_breaks: bool = True) -> Answer:
    """A server-sent-event stream without end: events forever, or (``line_breaks=False``) one ``data:`` line
    that never ends."""
    event = b'data: {"choices": [{"delta": {"content": "xxxxxxxx"}}]}\n\n' * 512
    body = event if line_breaks else CHUNK

    def write(sock: socket.socket) -> None:
        sock.sendall(_head(200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}))
        sock.sendall(b"6\r\ndata: \r\n")
        frame = f"{len(body):x}\r\n".encode() + body + b"\r\n"
        _forever(sock, lambda: frame)

    return write


def endless_until_close(content_type: str = "application/json") -> Answer:
    """No Content-Length, no chunking, ``Connection: close``: a body that ends when the connection does."""

    def write(sock: socket.socket) -> None:
        sock.sendall(_head(200, {"Content-Type": content_type, "Connection": "close"}))
        _forever(sock, lambda: CHUNK)

    return write


def lying_length(declared: int) -> Answer:
    """A ``Content-Length`` of ``declared`` bytes, and a body without end."""

    def write(sock: socket.socket) -> None:
        sock.sendall(_head(200, {"Content-Type": "application/json", "Content-Length": str(declared)}))
        _forever(sock, lambda: CHUNK)

    return write


def gzip_bomb() -> Answer:
    """``Content-Encoding: gzip``, chunked, a stream of zeros compressed a thousand to one, without end."""

    def write(sock: socket.socket) -> None:
        sock.sendall(_head(200, {"Content-Type": "application/json", "Content-Encoding": "gzip",
                                 "Transfer-Encoding": "chunked"}))
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)
        zeros = b"0" * (1 << 20)

        def piece() -> bytes:
            data = packer.compress(zeros) + packer.flush(zlib.Z_SYNC_FLUSH)
            return f"{len(data):x}\r\n".encode() + data + b"\r\n"

        _forever(sock, piece)

    return write


def huge_headers(count: int, size: int) -> Answer:
    """``count`` header lines of ``size`` bytes each before an empty JSON body."""

    def write(sock: socket.socket) -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json\r\n")
        with contextlib.suppress(OSError):
            for n in range(count):
                sock.sendall(f"X-Junk-{n}: ".encode() + b"y" * size + b"\r\n")
            sock.sendall(b"Content-Length: 2\r\n\r\n{}")

    return write


def garbage(data: bytes) -> Answer:
    """Bytes that are not an HTTP reply at all, then the connection closes."""

    def write(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.sendall(data)

    return write


def chat_completion(content: str = "<predicted_observation>ok</predicted_observation>") -> Answer:
    """A well-formed chat completion answering ``content``."""
    return json_answer({"id": "x", "object": "chat.completion", "model": "m",
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": content}}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1}})


MODELS = json_answer({"object": "list", "data": [{"id": "m", "object": "model"}]})
"""``GET /v1/models`` listing the one model ``m`` (no context length: the doctor then asks ``/props``)."""


@dataclass
class HostileServer:
    """The server's routes (``"GET /v1/models"`` → :data:`Answer`) and every request line it received."""

    routes: dict[str, Answer]
    fallback: Answer = field(default_factory=lambda: json_answer({"error": "no such route"}, 404))
    hits: list[str] = field(default_factory=list)

    def answer(self, method: str, path: str) -> Answer:
        route = f"{method} {path.split('?')[0]}"
        self.hits.append(route)
        return self.routes.get(route, self.fallback)


def _read_request(sock: socket.socket) -> tuple[str, str] | None:
    """The method and path of one request, its body read and dropped (None: the client hung up)."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        if not piece:
            return None
        data += piece
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next((int(v) for k, _, v in (line.partition(":") for line in lines[1:])
                   if k.strip().lower() == "content-length"), 0)
    while len(rest) < length:
        piece = sock.recv(65536)
        if not piece:
            return None
        rest += piece
    method, path, _ = [*lines[0].split(" "), "", ""][:3]
    return method, path


@contextlib.contextmanager
def hostile_server(routes: dict[str, Answer], **options: Any) -> Iterator[tuple[str, HostileServer]]:
    """Serve ``routes`` on 127.0.0.1; yields the base URL (``http://127.0.0.1:PORT``) and the server record.

    One request per connection: each answer closes its connection when it is done (a hostile answer
    leaves the stream in no state to reuse).
    """
    state = HostileServer(routes, **options)

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            sock: socket.socket = self.request
            with contextlib.suppress(OSError):
                request = _read_request(sock)
                if request is not None:
                    state.answer(*request)(sock)

    socketserver.ThreadingTCPServer.allow_reuse_address = True
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()

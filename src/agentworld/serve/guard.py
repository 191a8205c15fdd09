"""One pure-ASGI guard in front of the simulator servers: Host, Origin and body type, bearer token,
body limit, server timing.

Pure ASGI rather than ``BaseHTTPMiddleware``: it runs on every step of every session, and it
must act before routing and parsing, so an unauthorised or oversized request costs nothing.
The token is compared in constant time; a body without ``Content-Length`` (chunked) is limited
while it is read. Requests a web page could send from the user's browser are refused before the
token is even looked at: a foreign ``Host`` (DNS rebinding, 421), a foreign ``Origin`` (403), and a
state-changing body that is not JSON (415; ``text/plain`` needs no CORS preflight, JSON does) —
the checks the MCP SDK applies to ``/mcp``, on every route.
"""

from __future__ import annotations

import hmac
import time
from typing import Any

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentworld.serve.net import host_name, token_bytes

OPEN_PATHS = frozenset({"/v1/health"})
"""Paths answered without a token (load balancers' health checks)."""
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""Methods whose body must be JSON."""


class GuardMiddleware:
    """Bearer-token check and request-body limit, before routing and parsing.

    The body is buffered (at most ``max_body_bytes``) and replayed to the app, so a body sent
    without ``Content-Length`` (chunked) is limited too.
    """

    def __init__(self, app: ASGIApp, *, token: str | None, max_body_bytes: int,
                 open_paths: frozenset[str] = OPEN_PATHS,
                 allowed_hosts: frozenset[str] | None = None) -> None:
        """``allowed_hosts``: the ``Host`` (and ``Origin``) names answered, lower case without port
        (:func:`agentworld.serve.net.allowed_host_names`); None answers any."""
        self.app = app
        self.allowed_hosts = allowed_hosts
        self._token = token_bytes(token)  # an empty token is refused, never read as "none"
        self.max_body_bytes = max_body_bytes
        self.open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _timed(send, time.perf_counter())
        headers = dict(scope["headers"])
        refused = self._cross_site(scope["method"], headers)
        if refused is not None:
            await _send(send, refused[0], {"detail": refused[1]})
            return
        if self._token is not None and scope["path"] not in self.open_paths and not self._authorised(headers):
            await _send(send, 401, {"detail": "missing or wrong bearer token (Authorization: Bearer …)"},
                        extra=[(b"www-authenticate", b"Bearer")])
            return
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            await _send(send, 413, {"detail": f"request body over {self.max_body_bytes} bytes"})
            return
        if scope["method"] in ("GET", "HEAD", "DELETE") and length is None:
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_body_bytes:
                await _send(send, 413, {"detail": f"request body over {self.max_body_bytes} bytes"})
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        replay: list[Message] = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replay_receive() -> Message:
            return replay.pop() if replay else await receive()

        await self.app(scope, replay_receive, send)

    def _cross_site(self, method: str, headers: dict[bytes, bytes]) -> tuple[int, str] | None:
        """Status and reason to refuse a request a foreign web page could have sent, or None."""
        if self.allowed_hosts is not None:
            host = headers.get(b"host")
            if host is not None and host_name(host.decode("latin-1")) not in self.allowed_hosts:
                return 421, "this server does not answer to that Host (start it with --allowed-host NAME)"
            origin = headers.get(b"origin")
            if origin is not None and _origin_host(origin.decode("latin-1")) not in self.allowed_hosts:
                return 403, "cross-origin requests are refused (Origin is not this server)"
        if method in STATE_CHANGING and _has_body(headers):
            kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            if kind != b"application/json":
                return 415, "the request body must be JSON (Content-Type: application/json)"
        return None

    def _authorised(self, headers: dict[bytes, bytes]) -> bool:
        assert self._token is not None
        scheme, _, given = headers.get(b"authorization", b"").partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self._token)


def _origin_host(origin: str) -> str | None:
    """The host of an ``Origin`` header (``null`` and malformed ones: None, never allowed)."""
    from urllib.parse import urlsplit

    try:
        return urlsplit(origin).hostname
    except ValueError:
        return None


def _has_body(headers: dict[bytes, bytes]) -> bool:
    length = headers.get(b"content-length")
    return b"transfer-encoding" in headers if length is None else length.strip() not in (b"", b"0")


def _timed(send: Send, started: float) -> Send:
    """Add ``Server-Timing: app;dur=<ms>`` (request received → response start) to every response.

    Clients subtract the model's time (``StepResult.latency_s``) from it to get the server's own
    overhead per step, free of their HTTP stack (``benchmarks/bench_sessions.py`` does).
    """

    async def timed_send(message: Message) -> None:
        if message["type"] == "http.response.start":
            took = (time.perf_counter() - started) * 1000
            message = {**message, "headers": [*message.get("headers", []),
                                              (b"server-timing", f"app;dur={took:.3f}".encode())]}
        await send(message)

    return timed_send


async def _send(send: Send, status: int, body: Any, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    payload = orjson.dumps(body)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(payload)).encode()), *(extra or [])]})
    await send({"type": "http.response.body", "body": payload})

"""Listening sockets and exposure checks for the servers (mock model server, simulator servers).

Light on purpose (uvicorn is imported when a server starts): the serve CLI imports it for ``--help``.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from typing import Any

from agentworld.errors import AgentWorldError


def bind_tcp(host: str, port: int, backlog: int = 2048) -> socket.socket:
    """A non-blocking listening TCP socket for uvicorn's ``sockets=``.

    ``IPPROTO_TCP`` must be explicit: asyncio sets ``TCP_NODELAY`` on accepted connections only
    when the protocol says TCP, and without it Nagle + delayed ACK add ~40 ms to every response
    (headers and body are written separately). Port 0 picks a free port.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    sock.setblocking(False)
    return sock


KEEP_ALIVE_S = 75.0
"""How long an idle keep-alive connection stays open (uvicorn's default is 5 s).

Why: a client must stop reusing an idle connection *before* the server closes it. httpx (the
benchmarks', the tests' and most Python agents' client) reuses a pooled connection idle for up to
5 s — uvicorn's default closes it at 5 s, so a request sent on a connection at the edge of its life
meets a close that discards it unread and the kernel answers with a reset (``httpx.ReadError``,
``ECONNRESET``). A busy event loop widens the window from microseconds to its lag, which is why
``bench_sessions.py`` died at 64+ sessions. 75 s (nginx's default) is well above the idle expiry of
common clients (httpx 5 s, aiohttp 15 s, Node 4-5 s, Go 90 s is the exception); idle sockets cost
one file descriptor each.
"""


def uvicorn_config(asgi_app: Any, **overrides: Any) -> Any:
    """The ``uvicorn.Config`` every agentworld server uses: quiet, high limits, long keep-alive.

    ``overrides`` replace single settings (``lifespan``, ``timeout_graceful_shutdown``, ``backlog``).
    """
    import uvicorn

    settings: dict[str, Any] = {"log_level": "warning", "access_log": False, "lifespan": "on",
                                "limit_concurrency": 100_000, "backlog": 2048,
                                "timeout_keep_alive": KEEP_ALIVE_S, "timeout_graceful_shutdown": 3}
    return uvicorn.Config(asgi_app, **(settings | overrides))


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, has_token: bool, allow_no_token: bool) -> None:
    """Refuse to serve a non-loopback address without a token unless told to; warn when told to.

    Why: a simulator spends model compute (and reads its clients' tool schemas) for whoever
    reaches the port; on a shared network that must be a decision, not a default.

    Raises:
        AgentWorldError: ``host`` is not loopback, no token is set and ``allow_no_token`` is false.
    """
    if has_token or is_loopback(host):
        return
    if not allow_no_token:
        raise AgentWorldError(f"--host {host} is reachable from other machines and no --token is set (or "
                              f"AGENTWORLD_TOKEN); set one, or pass --allow-no-token to serve without")
    print(f"agentworld: WARNING: serving on {host} WITHOUT A TOKEN: anyone who reaches this port can use "
          "the world model", file=sys.stderr, flush=True)


def run_uvicorn(asgi_app: Any, host: str, port: int, path: str) -> None:
    """Serve ``asgi_app`` until interrupted; announce ``http://HOST:PORT{path}`` on stderr.

    The socket is bound first so ``--port 0`` works: the announced URL carries the chosen port.
    """
    import uvicorn

    sock = bind_tcp(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    print(f"agentworld: listening on http://{shown}:{bound_port}{path}", file=sys.stderr, flush=True)
    try:
        uvicorn.Server(uvicorn_config(asgi_app)).run(sockets=[sock])
    finally:
        sock.close()

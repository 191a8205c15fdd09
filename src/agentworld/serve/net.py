"""Listening sockets and exposure checks for the servers (mock model server, simulator servers).

Light on purpose (uvicorn is imported when a server starts): the serve CLI imports it for ``--help``.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
import sys
from collections.abc import Sequence
from typing import Any

from agentworld.envs.loopback import KEEP_ALIVE_S
from agentworld.errors import AgentWorldError


def bind_tcp(host: str, port: int, backlog: int = 2048) -> socket.socket:
    """A non-blocking listening TCP socket for uvicorn's ``sockets=``.

    ``IPPROTO_TCP`` must be explicit: asyncio sets ``TCP_NODELAY`` on accepted connections only
    when the protocol says TCP, and without it Nagle + delayed ACK add ~40 ms to every response
    (headers and body are written separately). Port 0 picks a free port.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        raise AgentWorldError(_bind_problem(host, port, exc)) from None
    sock.setblocking(False)
    return sock


def _bind_problem(host: str, port: int, exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (f"port {port} on {host} is already in use (another server is listening there): pick another "
                "--port, or --port 0 for a free one")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return (f"not allowed to listen on port {port} of {host} (ports below 1024 need privileges): pick "
                "another --port")
    if exc.errno == errno.EADDRNOTAVAIL or isinstance(exc, socket.gaierror):
        return f"cannot listen on --host {host}: no such address on this machine"
    return f"cannot listen on {host}:{port}: {exc.strerror or exc}"


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


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
"""Host names every server answers to: a client on this machine may use any of them."""
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})


def host_name(host: str) -> str:
    """``host`` (an address, a name, or a ``Host`` header with its port) as compared: lower case, no
    brackets, no port (``[::1]:8765`` → ``::1``, ``LOCALHOST:80`` → ``localhost``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def allowed_host_names(bound: str, extra: Sequence[str] = ()) -> frozenset[str] | None:
    """The ``Host`` names a server bound to ``bound`` answers, or None for any.

    Why: a page in the user's browser can make a loopback server's name resolve to it (DNS
    rebinding) and then send it requests with its own ``Host``; a server that only answers its
    own names is out of that page's reach. A wildcard bind (``0.0.0.0``, ``::``) is reached under
    names nobody listed, so it answers any (its token protects it) unless ``extra`` names them.
    """
    wildcard = host_name(bound) in _WILDCARDS
    if wildcard and not extra:
        return None
    return frozenset(host_name(h) for h in (*LOOPBACK_NAMES, *extra, *(() if wildcard else (bound,))))


def token_bytes(token: str | None) -> bytes | None:
    """The bearer token a server checks, or None when none is set: the one definition of "a token is set".

    Why one definition: the exposure check and the request guard once disagreed on ``--token ""``
    (a token to the first, none to the second), so a public server started silently and answered
    everyone. An empty or blank token is neither: it is refused.

    Raises:
        AgentWorldError: ``token`` is empty or only whitespace.
    """
    if token is None:
        return None
    if not token.strip():
        raise AgentWorldError("the token is empty: give a non-empty --token, or leave it unset")
    return token.encode()


def check_exposure(host: str, token: str | None, allow_no_token: bool, *,
                   envvar: str = "AGENTWORLD_TOKEN") -> None:
    """Refuse to serve a non-loopback address without a token unless told to; warn when told to.

    Why: a simulator spends model compute (and reads its clients' tool schemas), a mock server
    shows its request log, for whoever reaches the port; on a shared network that must be a
    decision, not a default. ``envvar`` is the variable the server also reads its token from.

    Raises:
        AgentWorldError: the token is empty (:func:`token_bytes`), or ``host`` is not loopback, no
            token is set and ``allow_no_token`` is false.
    """
    if token_bytes(token) is not None or is_loopback(host):
        return
    if not allow_no_token:
        raise AgentWorldError(f"--host {host} is reachable from other machines and no --token is set (or "
                              f"{envvar}); set one, or pass --allow-no-token to serve without")
    print(f"agentworld: WARNING: serving on {host} WITHOUT A TOKEN: anyone who reaches this port can use "
          "it", file=sys.stderr, flush=True)


def run_uvicorn(asgi_app: Any, host: str, port: int, path: str) -> None:
    """Serve ``asgi_app`` until interrupted; announce ``http://HOST:PORT{path}`` on stderr.

    The socket is bound first so ``--port 0`` works: the announced URL carries the chosen port.
    """
    import uvicorn

    sock = bind_tcp(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    print(f"agentworld: listening on http://{shown}:{bound_port}{path}", file=sys.stderr, flush=True)
    tune_gc()
    try:
        uvicorn.Server(uvicorn_config(asgi_app)).run(sockets=[sock])
    finally:
        sock.close()


GC_THRESHOLDS = (50_000, 50, 100)
"""The collector's thresholds in a server (Python's defaults: 700, 10, 10)."""


def tune_gc() -> None:
    """Make the cyclic garbage collector run rarely, and never over what start-up built.

    Why: a server holding a thousand sessions has a large heap, and a full collection walks all of
    it with the event loop stopped. Every request allocates (pydantic models, the MCP SDK's streams
    and tasks), so at Python's default thresholds ``serve mcp`` with 1,000 sessions ran 1,337
    collections in one 3-step run, 9.9 s in all, the worst 0.84 s each: every session's step
    waited. Freezing what start-up built (modules, the app) keeps it out of every collection, and
    a first threshold of 50,000 lets short-lived objects die before they are ever collected; the
    same run then made 9 collections (1.0 s) and its p99 step overhead fell from 1,178 to 58 ms
    (``benchmarks/bench_scale.py``). Reference cycles are still collected, only in fewer passes.
    """
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)

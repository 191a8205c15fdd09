"""Serve an ASGI app on 127.0.0.1 from a background thread (the local sites a browser visits).

Why: real environments that need a site (the web recorder's pages) must run without network; a
thread in the recorder's own process dies with it, so a killed recorder leaves no server behind.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from agentworld.errors import AgentWorldError

KEEP_ALIVE_S = 75
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

class LoopbackServer:
    """uvicorn on ``127.0.0.1`` and a free port, in a daemon thread; a context manager.

    Attributes:
        origin: ``http://127.0.0.1:<port>`` once started.
    """

    def __init__(self, app: Any, *, start_timeout_s: float = 20.0) -> None:
        self.app = app
        self.start_timeout_s = start_timeout_s
        self.origin = ""
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LoopbackServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> str:
        """Bind, start serving and return the origin."""
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off",
                                timeout_keep_alive=KEEP_ALIVE_S)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True,
                                        name=f"loopback-{port}")
        self._thread.start()
        deadline = time.monotonic() + self.start_timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise AgentWorldError(f"the local site server on 127.0.0.1:{port} did not start")
            time.sleep(0.01)
        self.origin = f"http://127.0.0.1:{port}"
        return self.origin

    def stop(self) -> None:
        """Stop serving and join the thread (idempotent)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

"""Listening sockets for the servers (mock model server, simulator servers)."""

from __future__ import annotations

import socket


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

"""A blocking MCP client over stdio (the ``mcp`` SDK on a private event loop thread).

Why: recorders and real environments step one tool call at a time from synchronous code; the SDK is
async. An anyio blocking portal runs the SDK's own stdio transport and session in a thread, so the
server is started, spoken to and stopped exactly as any SDK client does it. Results are read into
text the way the recording proxy reads them (:func:`agentworld.envs.mcp_proxy.response_text`), so
what a real environment returns is what a recorded row holds.

A server that writes lines other than JSON-RPC to its stdout (banners, debug prints) breaks no
session, but the SDK logs a whole traceback for each such line (180 MB of stderr for 4.4 MB of
junk): those lines are counted here instead (:attr:`McpClient.junk`) and summarised in one warning
when the session ends.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from agentworld.envs.mcp_proxy import response_text

log = logging.getLogger("agentworld.envs.mcp")

SDK_JUNK_LINE = "Failed to parse JSONRPC message from server"
"""What the SDK's stdio transport logs, with a traceback, for each stdout line that is not JSON-RPC."""


class _NoJunkTracebacks(logging.Filter):
    """Drops the SDK's per-line traceback; the session's :class:`JunkLines` counts the line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != SDK_JUNK_LINE


def _quiet_sdk_transport() -> None:
    sdk = logging.getLogger("mcp.client.stdio")
    if not any(isinstance(f, _NoJunkTracebacks) for f in sdk.filters):
        sdk.addFilter(_NoJunkTracebacks())


@dataclass
class JunkLines:
    """Lines of a server's stdout that were not JSON-RPC: how many, and the first (shortened)."""

    count: int = 0
    first: str = ""

    def add(self, error: Exception) -> None:
        if not self.count:
            errors = getattr(error, "errors", None)
            found = errors()[0].get("input") if callable(errors) and errors() else None
            self.first = (found if isinstance(found, str) else str(error).splitlines()[0])[:120]
        self.count += 1

    def summary(self, server: str) -> str:
        return (f"agentworld: the MCP server {server} wrote {self.count} line(s) to stdout that are not "
                f"JSON-RPC; they were ignored (first: {self.first!r})")


class McpClient:
    """One stdio MCP session with a server started from ``command``; :meth:`close` stops it.

    Args:
        command: the server's argv.
        env: the server's whole environment (the SDK otherwise passes only a safe few variables).
        cwd: its working folder.
        errlog: where the server's stderr goes (a real file: the SDK hands it to the process).
        timeout_s: longest wait for any one answer.
        label: how messages name the server (default: its command's first word).
    """

    def __init__(self, command: Sequence[str], *, env: Mapping[str, str] | None = None,
                 cwd: str | Path | None = None, errlog: TextIO | None = None,
                 timeout_s: float = 60.0, label: str | None = None) -> None:
        from anyio.from_thread import start_blocking_portal
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=command[0], args=list(command[1:]),
                                       env=dict(env) if env is not None else None, cwd=cwd)
        self.timeout_s = timeout_s
        self.label = label or command[0]
        self.junk = JunkLines()
        _quiet_sdk_transport()
        self._stack = ExitStack()
        try:
            self._portal = self._stack.enter_context(start_blocking_portal())
            transport = stdio_client(params, errlog) if errlog is not None else stdio_client(params)
            read, write = self._stack.enter_context(self._portal.wrap_async_context_manager(transport))
            session = ClientSession(read, write, read_timeout_seconds=timeout_s,
                                    message_handler=self._on_message)
            self.session = self._stack.enter_context(self._portal.wrap_async_context_manager(session))
            init = self._portal.call(self.session.initialize)
            self.server_info: dict[str, Any] = init.server_info.model_dump(mode="json", exclude_none=True)
            listed = self._portal.call(self.session.list_tools)
            self.tools: list[dict[str, Any]] = [
                t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
        except BaseException:
            self._stack.close()
            raise

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.junk.add(message)

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> tuple[str, bool]:
        """Call a tool; its text and error flag (a JSON-RPC error reads ``Error: <message>``)."""
        from mcp.shared.exceptions import MCPError

        call = functools.partial(self.session.call_tool, name, dict(arguments or {}))
        try:
            result = self._portal.call(call)
        except MCPError as exc:
            return response_text({"error": {"code": exc.code, "message": exc.message}})
        return response_text({"result": result.model_dump(mode="json", by_alias=True, exclude_none=True)})

    def close(self) -> None:
        """End the session and stop the server (as the SDK does: EOF, then SIGTERM, then SIGKILL).

        Lines of its stdout that were not JSON-RPC are summarised in one warning (idempotent).
        """
        self._stack.close()
        if self.junk.count:
            log.warning("%s", self.junk.summary(self.label))
            self.junk = JunkLines()

    def __enter__(self) -> McpClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

"""A blocking MCP client over stdio (the ``mcp`` SDK on a private event loop thread).

Why: recorders and real environments step one tool call at a time from synchronous code; the SDK is
async. An anyio blocking portal runs the SDK's own stdio transport and session in a thread, so the
server is started, spoken to and stopped exactly as any SDK client does it. Results are read into
text the way the recording proxy reads them (:func:`agentworld.envs.mcp_proxy.response_text`), so
what a real environment returns is what a recorded row holds.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TextIO

from agentworld.envs.mcp_proxy import response_text


class McpClient:
    """One stdio MCP session with a server started from ``command``; :meth:`close` stops it.

    Args:
        command: the server's argv.
        env: the server's whole environment (the SDK otherwise passes only a safe few variables).
        cwd: its working folder.
        errlog: where the server's stderr goes (a real file: the SDK hands it to the process).
        timeout_s: longest wait for any one answer.
    """

    def __init__(self, command: Sequence[str], *, env: Mapping[str, str] | None = None,
                 cwd: str | Path | None = None, errlog: TextIO | None = None,
                 timeout_s: float = 60.0) -> None:
        from anyio.from_thread import start_blocking_portal
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=command[0], args=list(command[1:]),
                                       env=dict(env) if env is not None else None, cwd=cwd)
        self.timeout_s = timeout_s
        self._stack = ExitStack()
        try:
            self._portal = self._stack.enter_context(start_blocking_portal())
            transport = stdio_client(params, errlog) if errlog is not None else stdio_client(params)
            read, write = self._stack.enter_context(self._portal.wrap_async_context_manager(transport))
            session = ClientSession(read, write, read_timeout_seconds=timeout_s)
            self.session = self._stack.enter_context(self._portal.wrap_async_context_manager(session))
            init = self._portal.call(self.session.initialize)
            self.server_info: dict[str, Any] = init.server_info.model_dump(mode="json", exclude_none=True)
            listed = self._portal.call(self.session.list_tools)
            self.tools: list[dict[str, Any]] = [
                t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
        except BaseException:
            self._stack.close()
            raise

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
        """End the session and stop the server (as the SDK does: EOF, then SIGTERM, then SIGKILL)."""
        self._stack.close()

    def __enter__(self) -> McpClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

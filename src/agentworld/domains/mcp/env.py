"""A real MCP server as a :class:`~agentworld.domains.base.RealEnvironment` (sim-to-real routing, demos).

Why: a routed step that runs for real must answer exactly as the recorder would have recorded it, or
the real and the predicted turns of one episode disagree in form. So the server is a preset of the
recorder (:mod:`agentworld.domains.mcp.servers`) in a fresh folder shown as ``/workspace``, the client
is the ``mcp`` SDK, and results are read into text as the proxy reads them: :meth:`McpEnvironment.step`
returns a recorded row's observation without its ``**Environment Observation:**`` line.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentworld.domains.actions import tool_call


class McpEnvironment:
    """One server session in its own folder; :meth:`close` stops the server and removes the folder.

    The folder and every process started for it go even if this process is killed (a
    :class:`~agentworld.envs.janitor.Janitor` watches).
    """

    def __init__(self, server: str = "filesystem", *, files: Mapping[str, str] | None = None,
                 changes: Mapping[str, str] | None = None, command: Sequence[str] | None = None,
                 timeout_s: float = 60.0) -> None:
        from agentworld.domains.mcp.servers import PathMap, preset
        from agentworld.envs.janitor import Janitor
        from agentworld.envs.mcp_client import McpClient

        self.server = preset(server)
        self._janitor = Janitor()
        self._closed = False
        try:
            self._dir = Path(tempfile.mkdtemp(prefix=f"agentworld-mcp-{os.getpid()}-"))
            self._janitor.track(self._dir)
            root = self._dir / "workspace"
            root.mkdir()
            self.server.prepare(root, files or {}, changes)
            argv = [c.replace("{root}", str(root)) for c in command] if command else self.server.argv(root)
            self._errlog = (self._dir / "stderr.log").open("w", encoding="utf-8")
            self.paths = PathMap(str(root))
            self._client = McpClient(argv, env={**self.server.environment(root), **self._janitor.env},
                                     cwd=root, errlog=self._errlog, timeout_s=timeout_s)
        except BaseException:
            self._janitor.close()
            raise
        self.tools: list[dict[str, Any]] = self._client.tools

    def initial_observation(self) -> str:
        """Nothing: an MCP session shows no state before its first call (the tools are in the prompt)."""
        return ""

    def step(self, action: str) -> str:
        """Perform the tool call in ``action`` (row text) and return its result text as rows hold it.

        Raises:
            ValueError: the action holds no JSON tool call.
        """
        call = tool_call(action)
        if call is None:
            raise ValueError(f"not an MCP tool call: {action[:80]!r}")
        name, arguments = call
        text, _is_error = self._client.call(name, self.paths.actual(arguments))
        return self.paths.shown(text)

    def close(self) -> None:
        """Stop the server, remove its folder (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._client.close()
        finally:
            self._errlog.close()
            self._janitor.close()


def open_environment(seed: int = 0, server: str = "filesystem", **options: Any) -> McpEnvironment:
    """A real MCP server session (``server``: git, time, filesystem or memory).

    ``seed`` is accepted for the common factory signature; these servers start the same every time.
    Options: ``files`` (relative path → text written first; for git the first commit), ``changes``
    (written after), ``command`` (replaces the preset's server
    command; ``{root}`` is the folder), ``timeout_s``.
    """
    del seed
    return McpEnvironment(server, **options)

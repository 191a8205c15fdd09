"""A real MCP server as a :class:`~agentworld.domains.base.RealEnvironment` (sim-to-real routing, demos).

Why: a routed step that runs for real must answer exactly as the recorder would have recorded it, or
the real and the predicted turns of one episode disagree in form. So the server is a preset of the
recorder (:mod:`agentworld.domains.mcp.servers`) in a fresh folder shown as ``/workspace``, the client
is the ``mcp`` SDK, and results are read into text as the proxy reads them: :meth:`McpEnvironment.step`
returns a recorded row's observation without its ``**Environment Observation:**`` line.

Without a ``server``, the environment starts on its first step the server whose tools include the
called one (as the shipped corpus lists them), so a router can open it before knowing the episode.
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

    def __init__(self, server: str | None = None, *, files: Mapping[str, str] | None = None,
                 changes: Mapping[str, str] | None = None, command: Sequence[str] | None = None,
                 timeout_s: float = 60.0) -> None:
        from agentworld.domains.mcp.servers import preset

        self.server = preset(server) if server is not None else None
        self._setup = (dict(files or {}), dict(changes or {}), list(command) if command else None, timeout_s)
        self._client: Any = None
        self._janitor: Any = None
        self._errlog: Any = None
        self._closed = False
        self.tools: list[dict[str, Any]] = []
        if self.server is not None:
            self._start()

    def _start(self) -> None:
        from agentworld.domains.mcp.servers import PathMap
        from agentworld.envs.janitor import Janitor
        from agentworld.envs.mcp_client import McpClient

        assert self.server is not None
        files, changes, command, timeout_s = self._setup
        self._janitor = Janitor()
        try:
            # resolved: a server that resolves its folder (a temp folder behind a link) names it as we do
            folder = Path(tempfile.mkdtemp(prefix=f"agentworld-mcp-{os.getpid()}-")).resolve()
            self._janitor.track(folder)
            root = folder / "workspace"
            root.mkdir()
            self.server.prepare(root, files, changes)
            argv = [c.replace("{root}", str(root)) for c in command] if command else self.server.argv(root)
            self._errlog = (folder / "stderr.log").open("w", encoding="utf-8")
            self.paths = PathMap(str(root))
            self._client = McpClient(argv, env={**self.server.environment(root), **self._janitor.env},
                                     cwd=root, errlog=self._errlog, timeout_s=timeout_s)
        except BaseException:
            self.close()
            raise
        self.tools = self._client.tools

    def initial_observation(self) -> str:
        """Nothing: an MCP session shows no state before its first call (the tools are in the prompt)."""
        return ""

    def step(self, action: str) -> str:
        """Perform the tool call in ``action`` (row text) and return its result text as rows hold it.

        Raises:
            ValueError: the action holds no JSON tool call (a call of a tool no server here offers,
                before a server was chosen, is answered with an error text instead).
        """
        if self._closed:
            raise ValueError("the MCP environment is closed")
        call = tool_call(action)
        if call is None:
            raise ValueError(f"not an MCP tool call: {action[:80]!r}")
        name, arguments = call
        if self._client is None:
            from agentworld.domains.mcp.routing import tool_servers
            from agentworld.domains.mcp.servers import preset

            chosen = tool_servers().get(name)
            if chosen is None:
                return f"Error: no real MCP server here offers the tool {name!r}"
            self.server = preset(chosen)
            self._start()
        text, _is_error = self._client.call(name, self.paths.actual(arguments))
        return self.paths.shown(text)

    def close(self) -> None:
        """Stop the server, remove its folder (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._client is not None:
                self._client.close()
        finally:
            if self._errlog is not None:
                self._errlog.close()
            if self._janitor is not None:
                self._janitor.close()


def open_environment(seed: int = 0, server: str | None = None, **options: Any) -> McpEnvironment:
    """A real MCP server session (``server``: git, time, filesystem or memory; None: chosen by the first
    call's tool).

    ``seed`` is accepted for the common factory signature; these servers start the same every time.
    Options: ``files`` (relative path → text written first; for git the first commit), ``changes``
    (written after), ``command`` (replaces the preset's server command; ``{root}`` is the folder),
    ``timeout_s``.
    """
    del seed
    return McpEnvironment(server, **options)

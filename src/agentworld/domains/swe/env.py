"""The SWE domain's real environment: one vendored repository in a sandboxed workspace.

Actions and observations are row texts: an action is a tool call as ``format_tool_action`` writes it
(``**Action:**`` and ``{"tool_name": …, "arguments": …}``, optionally after the first turn's
``**Current State:**``), an observation is what the tool prints, without the observation marker.
The recorder and sim-to-real routing both drive this class, so what one records the other returns.
"""

from __future__ import annotations

import re
from typing import Any

from agentworld.domains.actions import tool_call
from agentworld.domains.swe.repos import REPOSITORIES, archive_path, repository
from agentworld.envs.sandbox import SandboxConfig, SandboxError
from agentworld.envs.workspace import TOOL_NAMES, Workspace, WorkspaceConfig

DEFAULT_REPOSITORY = "inflection"


_REPO_RE = re.compile(r"^Working directory: \S+ \(git repository of (?P<name>[\w.-]+) ", re.M)


class SweEnvironment:
    """A repository workspace answering coding-agent tool calls (a ``RealEnvironment``).

    The workspace starts on first use. Without an explicit ``repo``, a first action that carries the
    ``**Current State:**`` of a recorded session (``Working directory: /app (git repository of six …``)
    picks that session's repository, so a router can replay any recorded episode for real.
    """

    def __init__(self, repo: str | None = None, *, seed: int | str = 0,
                 sandbox: SandboxConfig | None = None, config: WorkspaceConfig | None = None) -> None:
        if repo is not None:
            repository(repo)
        self._repo, self._seed, self._sandbox, self._config = repo, seed, sandbox, config
        self._workspace: Workspace | None = None
        self._closed = False

    def _open(self, repo: str | None = None) -> Workspace:
        if self._closed:
            raise SandboxError("the SWE environment is closed")
        if self._workspace is None:
            name = self._repo or repo or DEFAULT_REPOSITORY
            self.repository = repository(name)
            self._workspace = Workspace(archive_path(name), sandbox=self._sandbox, seed=self._seed,
                                        config=self._config)
        return self._workspace

    @property
    def workspace(self) -> Workspace:
        return self._open()

    def initial_observation(self) -> str:
        """What the agent is told before its first call: the working directory and its tree."""
        ws = self._open()
        return (f"Working directory: {ws.root} (git repository of {self.repository.name} "
                f"{self.repository.version}, unpacked from its sdist)\n"
                f"Here is the folder structure of the current working directories:\n\n{ws.tree()}")

    def step(self, action: str) -> str:
        """Run one tool call (an action text) and return what the tool printed."""
        named = _REPO_RE.search(action) if self._workspace is None else None
        workspace = self._open(named.group("name") if named and named.group("name") in REPOSITORIES else None)
        call = tool_call(action)
        if call is None:
            return ("Error: the action is not a tool call; expected {\"tool_name\": …, \"arguments\": {…}} "
                    f"with tool_name one of {', '.join(TOOL_NAMES)}.")
        name, arguments = call
        return workspace.call(name, arguments)

    def close(self) -> None:
        """Free the sandbox, its processes and folders (idempotent)."""
        self._closed = True
        if self._workspace is not None:
            self._workspace.close()

    def __enter__(self) -> SweEnvironment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_environment(seed: int = 0, **options: Any) -> SweEnvironment:
    """The plugin's factory: ``repo`` (default: the one a first action names, else ``inflection``),
    ``sandbox``, ``config`` as in :class:`SweEnvironment`."""
    return SweEnvironment(seed=seed, **options)

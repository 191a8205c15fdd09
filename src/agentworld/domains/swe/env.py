"""The SWE domain's real environment: one vendored repository in a sandboxed workspace.

Actions and observations are row texts: an action is a tool call as ``format_tool_action`` writes it
(``**Action:**`` and ``{"tool_name": …, "arguments": …}``, optionally after the first turn's
``**Current State:**``), an observation is what the tool prints, without the observation marker.
The recorder and sim-to-real routing both drive this class, so what one records the other returns.
"""

from __future__ import annotations

from typing import Any

from agentworld.domains.actions import tool_call
from agentworld.domains.swe.repos import archive_path, repository
from agentworld.envs.sandbox import SandboxConfig
from agentworld.envs.workspace import TOOL_NAMES, Workspace, WorkspaceConfig

DEFAULT_REPOSITORY = "inflection"


class SweEnvironment:
    """A repository workspace answering coding-agent tool calls (a ``RealEnvironment``)."""

    def __init__(self, repo: str = DEFAULT_REPOSITORY, *, seed: int | str = 0,
                 sandbox: SandboxConfig | None = None, config: WorkspaceConfig | None = None) -> None:
        self.repository = repository(repo)
        self.workspace = Workspace(archive_path(repo), sandbox=sandbox, seed=seed, config=config)

    def initial_observation(self) -> str:
        """What the agent is told before its first call: the working directory and its tree."""
        r = self.workspace
        return (f"Working directory: {r.root} (git repository of {self.repository.name} "
                f"{self.repository.version}, unpacked from its sdist)\n"
                f"Here is the folder structure of the current working directories:\n\n{r.tree()}")

    def step(self, action: str) -> str:
        """Run one tool call (an action text) and return what the tool printed."""
        call = tool_call(action)
        if call is None:
            return ("Error: the action is not a tool call; expected {\"tool_name\": …, \"arguments\": {…}} "
                    f"with tool_name one of {', '.join(TOOL_NAMES)}.")
        name, arguments = call
        return self.workspace.call(name, arguments)

    def close(self) -> None:
        """Free the sandbox, its processes and folders (idempotent)."""
        self.workspace.close()

    def __enter__(self) -> SweEnvironment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_environment(seed: int = 0, **options: Any) -> SweEnvironment:
    """The plugin's factory: ``repo`` (default ``inflection``), ``sandbox``, ``config`` as in
    :class:`SweEnvironment`."""
    return SweEnvironment(seed=seed, **options)

"""The real MCP servers recorded offline, each confined to a temporary folder shown as ``/workspace``.

Why: a corpus is only re-recordable if the servers and what they see are the same each time. The
servers come from the package indexes (PyPI: ``mcp-server-git``, ``mcp-server-time``; npm:
``@modelcontextprotocol/server-filesystem``, ``@modelcontextprotocol/server-memory``) and touch only
a fresh folder (a git repository, a filesystem root, a memory file). Its real path is random, so
rows show it as :data:`DISPLAY_ROOT` (:class:`PathMap`); git dates, names and the time zone are
fixed, and the time server's clock is pinned (:mod:`agentworld.domains.mcp.frozen_time`).
``mcp-server-sqlite`` is left out: its last release needs ``mcp<2`` (it fails to start with the
``mcp`` 2 SDK this package uses).

npm servers live in :func:`node_servers_dir` (``$AGENTWORLD_MCP_SERVERS``, default
``~/.cache/agentworld/mcp-servers``); ``bash install.sh`` fills it, or
``python -m agentworld.domains.mcp.servers`` (runs ``npm install`` of the pinned versions).
"""

from __future__ import annotations

import importlib.util
import os
import posixpath
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld.errors import AgentWorldError

DISPLAY_ROOT = "/workspace"
NPM_PACKAGES = {"@modelcontextprotocol/server-filesystem": "2026.8.31",
                "@modelcontextprotocol/server-memory": "2026.8.31"}
GIT_DATE = "1735732800 +0000"
"""2025-01-01 12:00 UTC in git's internal form (the one both git and GitPython read)."""
FIXED_ENV = {"TZ": "UTC", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "GIT_AUTHOR_NAME": "Agent World",
             "GIT_AUTHOR_EMAIL": "agent@example.com", "GIT_COMMITTER_NAME": "Agent World",
             "GIT_COMMITTER_EMAIL": "agent@example.com", "GIT_AUTHOR_DATE": GIT_DATE,
             "GIT_COMMITTER_DATE": GIT_DATE, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
"""Every server runs with these, so commit hashes, dates and messages repeat across recordings."""


class ServerUnavailable(AgentWorldError):
    """A server is not installed here (the message says how to install it)."""


def node_servers_dir() -> Path:
    """Where the npm servers are installed (``$AGENTWORLD_MCP_SERVERS`` or the user cache)."""
    env = os.environ.get("AGENTWORLD_MCP_SERVERS")
    return Path(env) if env else Path.home() / ".cache" / "agentworld" / "mcp-servers"


@dataclass(frozen=True)
class ServerPreset:
    """A server by name: its command (``{root}`` = the folder), environment, and how to prepare the folder."""

    name: str
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    git: bool = False
    """The folder is a git repository with the scenario's files committed."""
    python_module: str | None = None
    npm_package: str | None = None

    def missing(self) -> str | None:
        """Why the server cannot run here, or ``None``."""
        if self.python_module and importlib.util.find_spec(self.python_module) is None:
            return f"{self.name}: Python package {self.python_module.replace('_', '-')} is not installed"
        if self.npm_package:
            if shutil.which("node") is None:
                return f"{self.name}: node is not installed (apt-get install nodejs npm)"
            if not _npm_entry(self.npm_package).is_file():
                return (f"{self.name}: {self.npm_package} is not installed in {node_servers_dir()} "
                        "(bash install.sh, or python -m agentworld.domains.mcp.servers)")
        if self.git and shutil.which("git") is None:
            return f"{self.name}: git is not installed"
        return None

    def argv(self, root: Path) -> list[str]:
        """The server command for folder ``root``."""
        if why := self.missing():
            raise ServerUnavailable(why)
        head = ["node", str(_npm_entry(self.npm_package))] if self.npm_package else []
        return head + [part.replace("{root}", str(root)) for part in self.command]

    def environment(self, root: Path) -> dict[str, str]:
        """The server's whole environment: ours, the fixed values, its own (``{root}`` filled in)."""
        own = {k: v.replace("{root}", str(root)) for k, v in self.env.items()}
        return {**os.environ, **FIXED_ENV, **own}

    def prepare(self, root: Path, files: Mapping[str, str], changes: Mapping[str, str] | None = None) -> None:
        """Write the scenario's files into ``root`` (for git: its first commit), then its ``changes``."""
        _write(root, files)
        if self.git:
            env = self.environment(root)
            steps = [["init", "-q", "-b", "main"], ["add", "-A"],
                     ["commit", "-q", "--allow-empty", "-m", "Initial commit"]]
            for args in steps:
                subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
        _write(root, changes or {})


def _write(root: Path, files: Mapping[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _npm_entry(package: str | None) -> Path:
    return node_servers_dir() / "node_modules" / str(package) / "dist" / "index.js"


PRESETS: dict[str, ServerPreset] = {p.name: p for p in (
    ServerPreset("git", (sys.executable, "-m", "mcp_server_git", "--repository", "{root}"), git=True,
                 python_module="mcp_server_git"),
    ServerPreset("time", (sys.executable, "-m", "agentworld.domains.mcp.frozen_time", "--local-timezone",
                          "UTC"), python_module="mcp_server_time"),
    ServerPreset("filesystem", ("{root}",), npm_package="@modelcontextprotocol/server-filesystem"),
    ServerPreset("memory", (), env={"MEMORY_FILE_PATH": "{root}/memory.jsonl"},
                 npm_package="@modelcontextprotocol/server-memory"),
)}


def preset(name: str) -> ServerPreset:
    """The preset called ``name``."""
    if name not in PRESETS:
        raise AgentWorldError(f"unknown MCP server {name!r}; known: {', '.join(PRESETS)}")
    return PRESETS[name]


_CLIMB = re.compile(r"(?:^|/)\.\.(?:/|$)")
"""A ``..`` segment of a path."""


@dataclass(frozen=True)
class PathMap:
    """Swaps a folder's real path and :data:`DISPLAY_ROOT` in texts and arguments (both ways).

    Why more than the folder itself: what the agent sees and what rows hold must not tell where the
    folder lives on the host (nor differ from one run to the next). So the texts shown map the folder
    (and its resolved real path) to ``/workspace`` and the folder above it, the session's own
    temporary folder (and its real path), to ``/``, the root above ``/workspace``. And a lone path
    argument that climbs with ``..`` (``/workspace/../x``, ``../x``) is resolved against
    ``/workspace`` before it is sent, so the server sees ``/x`` as the agent meant it, never a path
    in the temporary folders above the real one, and its answers cannot name them.
    """

    real: str

    def _sub(self, text: str, old: str, new: str) -> str:
        return re.sub(re.escape(old) + r"(?![\w.-])", lambda _m: new, text)

    def shown(self, text: str) -> str:
        """Text as rows hold it: the real folder written as ``/workspace``, the one above it as ``/``."""
        real = self.real.rstrip("/") or "/"
        parent = os.path.dirname(real)
        for host in dict.fromkeys((real, os.path.realpath(real))):
            text = self._sub(text, host, DISPLAY_ROOT)
        for host in dict.fromkeys((parent, os.path.realpath(parent))):
            if host != "/":
                text = re.sub(re.escape(host) + r"(?:(?=/)|(?![\w.-]))",
                              lambda m: "" if m.string.startswith("/", m.end()) else "/", text)
        return text

    def _virtual(self, value: str) -> str:
        """A lone path climbing with ``..``, resolved against :data:`DISPLAY_ROOT` (no file touched)."""
        if not _CLIMB.search(value) or any(c.isspace() for c in value):
            return value
        joined = value if value.startswith("/") else f"{DISPLAY_ROOT}/{value}"
        return "/" + posixpath.normpath(joined).lstrip("/")

    def actual(self, value: Any) -> Any:
        """Arguments as the server needs them: ``/workspace`` written as the real folder (a lone path
        climbing out of it resolved first, see the class doc)."""
        if isinstance(value, str):
            return self._sub(self._virtual(value), DISPLAY_ROOT, self.real)
        if isinstance(value, list):
            return [self.actual(v) for v in value]
        if isinstance(value, dict):
            return {k: self.actual(v) for k, v in value.items()}
        return value


def install_node_servers(dest: Path | None = None) -> Path:
    """``npm install`` the pinned npm servers into ``dest`` (default :func:`node_servers_dir`)."""
    dest = dest or node_servers_dir()
    if shutil.which("npm") is None:
        raise AgentWorldError("npm is not installed (apt-get install nodejs npm)")
    dest.mkdir(parents=True, exist_ok=True)
    specs = [f"{name}@{version}" for name, version in NPM_PACKAGES.items()]
    subprocess.run(["npm", "install", "--prefix", str(dest), "--no-audit", "--no-fund", "--silent",
                    "--no-save", *specs], check=True)
    return dest


if __name__ == "__main__":
    print(f"MCP servers installed in {install_node_servers()}")

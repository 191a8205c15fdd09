"""A repository workspace inside the sandbox, and the coding-agent tools that act on it.

Why: a world model of a coding agent's environment is scored against what real tools print in a
real repository. :class:`Workspace` unpacks a source archive (an sdist, with its tests) into the
sandbox's ``/app``, makes it a git repository with a fixed first commit, and answers tool calls —
``run_shell_command``, ``read_file``, ``write_file``, ``replace``, ``list_directory``, ``glob``,
``search_file_content``, ``todo_write`` — by running :mod:`agentworld.envs.workspace_runner` *inside*
the sandbox, once per call. Nothing a tool does reaches the host: paths are resolved inside the
sandbox (where of the host only ``/usr`` and ``/etc`` are mounted, read-only) and refused outside
the workspace.

Domain-free: the SWE domain package (``agentworld.domains.swe``) chooses repositories and formats rows.
"""

from __future__ import annotations

import base64
import json
import shlex
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from agentworld.envs.sandbox import Sandbox, SandboxConfig, SandboxError

TOOL_NAMES: tuple[str, ...] = ("run_shell_command", "read_file", "write_file", "replace", "list_directory",
                               "glob", "search_file_content", "todo_write")
WORKSPACE_ROOT = "/app"
FIXED_MTIME = 1704067200
"""2024-01-01 00:00 UTC: every unpacked file's mtime, so listings sorted by time do not depend on when
the archive was unpacked."""
GIT_USER = ("agentworld", "agentworld@localhost")
"""The repository's own ``user.name`` and ``user.email``, so an agent's ``git commit`` works."""
TREE_LIMIT = 200
DEFAULT_ENV = {"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin"}
"""No ``__pycache__`` folders (they would show in ``git status`` and listings of every later turn), and
the OS's ``python3`` (with the OS's pytest) before any ``/usr/local`` one, so a workspace behaves the same
on machines whose images add their own Python."""


@dataclass(frozen=True)
class WorkspaceConfig:
    """What one workspace runs with.

    Attributes:
        shell_timeout_s: wall-clock limit of one ``run_shell_command`` (killed past it, and says so).
        tool_timeout_s: wall-clock limit of any other tool call, runner start included.
        git: make the workspace a git repository with one commit of the unpacked sources.
    """

    shell_timeout_s: float = 60.0
    tool_timeout_s: float = 30.0
    git: bool = True


def runner_source() -> str:
    """The tool runner's source, sent to the sandbox's Python (it is never imported there)."""
    return (resources.files("agentworld.envs") / "workspace_runner.py").read_text(encoding="utf-8")


class Workspace:
    """One repository in one sandbox; :meth:`call` runs a tool there and returns what it prints.

    Use as a context manager or call :meth:`close` (idempotent): the sandbox, its processes and
    folders go with it.
    """

    def __init__(self, archive: str | Path | None = None, *, sandbox: SandboxConfig | None = None,
                 seed: int | str | None = 0, config: WorkspaceConfig | None = None) -> None:
        self.config = config or WorkspaceConfig()
        self.root = WORKSPACE_ROOT
        self._runner = runner_source()
        base = sandbox or SandboxConfig()
        self.sandbox = Sandbox(replace(base, env={**DEFAULT_ENV, **base.env}), seed=seed)
        try:
            if archive is not None:
                self._unpack(Path(archive))
            self._setup()
        except BaseException:
            self.sandbox.close()
            raise

    def _sh(self, command: str, *, stdin: str | None = None, timeout: float = 60.0) -> str:
        result = self.sandbox.run(command, timeout=timeout, input=stdin)
        if result.returncode != 0 or result.timed_out:
            raise SandboxError(f"workspace set-up command failed (exit {result.returncode}): "
                               f"{command[:200]}: {(result.stderr or result.stdout).strip()[-500:]}")
        return result.stdout

    def _unpack(self, archive: Path) -> None:
        if not archive.is_file():
            raise SandboxError(f"no such repository archive: {archive}")
        data = base64.b64encode(archive.read_bytes()).decode("ascii")
        self._sh(f"base64 -d | tar -xzf - --no-same-owner --strip-components=1 -C {self.root}", stdin=data)

    def _setup(self) -> None:
        steps = [f"cd {self.root}"]
        if self.config.git:
            steps += ["git init -q -b main", f"git config user.name {GIT_USER[0]}",
                      f"git config user.email {GIT_USER[1]}", "git add -A",
                      "git commit -q -m 'Initial import' --no-gpg-sign"]
        steps.append(f"find {self.root} -exec touch -h -d @{FIXED_MTIME} {{}} +")
        self._sh(" && ".join(steps))

    def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """Run one tool call inside the sandbox and return its result text (errors included: a refused
        path or a missing file is an answer, as the real tool gives it)."""
        if self.sandbox.closed:
            raise SandboxError("the workspace is closed")
        request = {"tool": tool, "args": arguments, "root": self.root, "timeout": self.config.shell_timeout_s}
        cfg = self.config
        limit = (cfg.shell_timeout_s if tool == "run_shell_command" else cfg.tool_timeout_s) + 15
        result = self.sandbox.run(f"exec python3 -I -S -c {shlex.quote(self._runner)}",
                                  timeout=limit, input=json.dumps(request))
        if result.timed_out:
            return f"Error executing tool {tool}: the call ran past {limit:g} seconds and was stopped."
        try:
            return str(json.loads(result.stdout)["text"])
        except (ValueError, KeyError, TypeError):
            detail = (result.stderr or result.stdout).strip()[-500:]
            return f"Error executing tool {tool}: {detail or f'exit {result.returncode}'}"

    def tree(self, limit: int = TREE_LIMIT) -> str:
        """The folder structure an agent is shown at the start of a session (Gemini CLI's layout)."""
        listing = self._sh(f"cd {self.root} && find . -mindepth 1 \\( -name .git -o -name __pycache__ \\) "
                           "-prune -o -print")
        found = (p[2:] for p in listing.splitlines() if p.startswith("./"))
        paths = sorted(found, key=lambda p: p.split("/"))
        paths = paths[:limit]
        dirs = {p.rsplit("/", 1)[0] for p in paths if "/" in p}
        lines = [f"{self.root}/"]
        for i, path in enumerate(paths):
            depth = path.count("/")
            parent = path.rsplit("/", 1)[0] if depth else ""
            later = [q for q in paths[i + 1:] if (q.rsplit("/", 1)[0] if "/" in q else "") == parent]
            branch = "└───" if not later else "├───"
            indent = "".join("    " if self._last_at(paths, path, d) else "│   " for d in range(depth))
            name = path.rsplit("/", 1)[-1] + ("/" if path in dirs else "")
            lines.append(f"{indent}{branch}{name}")
        return "\n".join(lines)

    @staticmethod
    def _last_at(paths: list[str], path: str, depth: int) -> bool:
        """Whether the ancestor of ``path`` at ``depth`` is the last child of its folder."""
        parts = path.split("/")
        ancestor, parent = "/".join(parts[:depth + 1]), "/".join(parts[:depth])
        siblings = [p for p in paths
                    if p.count("/") == depth and (p.rsplit("/", 1)[0] if depth else "") == parent]
        return bool(siblings) and siblings[-1] == ancestor

    @property
    def closed(self) -> bool:
        return self.sandbox.closed

    def close(self) -> None:
        """Kill what runs in the sandbox and free its folders (idempotent)."""
        self.sandbox.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""MCP scenario files: which server, which files it starts with, which tool calls a client makes.

One JSON object per line (``scenarios/train.jsonl``, ``scenarios/heldout.jsonl``)::

    {"name": "git-edit-commit", "server": "git", "files": {"README.md": "# Demo\\n"},
     "calls": [{"tool": "git_status", "arguments": {"repo_path": "/workspace"}}, ...]}

``server`` names a preset of :mod:`agentworld.domains.mcp.servers` (git, time, filesystem, memory);
``files`` are written into the server's folder first (paths relative to it; for git they are the
first commit), ``changes`` after that (uncommitted changes); arguments name that
folder as ``/workspace``. A call may fail on purpose: its error is what gets recorded.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentworld.errors import DataError

MAX_CALLS = 200
MAX_FILE_BYTES = 1_000_000


class McpCall(BaseModel):
    """One ``tools/call``: the tool's name and its arguments."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str = Field(min_length=1, max_length=200, description="Tool name.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Tool arguments.")


class McpScenario(BaseModel):
    """A scripted client session against one server."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=120, description="Unique name.")
    server: str = Field(description="Server preset: git, time, filesystem or memory.")
    description: str = Field("", description="What the session does.")
    files: dict[str, str] = Field(default_factory=dict, description="Files written into the server's "
                                  "folder before it starts (relative path -> text).")
    changes: dict[str, str] = Field(default_factory=dict, description="Files written after that (for git: "
                                    "uncommitted changes).")
    calls: tuple[McpCall, ...] = Field(min_length=1, max_length=MAX_CALLS, description="Tool calls in order.")

    @field_validator("files", "changes")
    @classmethod
    def _relative_files(cls, files: dict[str, str]) -> dict[str, str]:
        for rel, text in files.items():
            parts = PurePosixPath(rel).parts
            if not rel or rel.startswith("/") or ".." in parts or "\\" in rel:
                raise ValueError(f"file path {rel!r} must be relative and stay inside the folder")
            if len(text.encode()) > MAX_FILE_BYTES:
                raise ValueError(f"file {rel!r} is larger than {MAX_FILE_BYTES} bytes")
        return files


def builtin_scenarios(split: str = "train") -> Path:
    """The shipped scenario file of ``split`` (``train`` or ``heldout``)."""
    return Path(str(resources.files("agentworld.domains.mcp") / "scenarios" / f"{split}.jsonl"))


def load_scenarios(path: str | Path) -> list[McpScenario]:
    """Read a scenario file (JSON lines); names must be unique and servers known.

    Raises:
        DataError: naming the file, line, scenario and field.
    """
    from agentworld.domains.mcp.servers import PRESETS
    from agentworld.domains.records_file import read_records, validated

    def parse(item: Any, line: int | None) -> McpScenario:
        scenario = validated(McpScenario, item, path=path, line=line)
        if scenario.server not in PRESETS:
            raise DataError(f"unknown server {scenario.server!r}; known: {', '.join(PRESETS)}",
                            path=str(path), line=line, field="server", sample_id=scenario.name)
        return scenario

    return read_records(path, parse, lambda s: s.name)

"""Records of the real MCP task suite: a task, and what must hold in the server's folder after it.

Why: one task is judged twice — in simulation from its tool calls alone (``trace``), in reality from
the real server's state (``expect``) — so both live in one frozen record that serialises to JSON
unchanged, and the real expectations are data (a few kinds below), not code per task.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Split = Literal["train", "test"]
TaskServer = Literal["filesystem", "memory", "git"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FileIs(_Record):
    """The file at ``path`` (as shown, under ``/workspace``) holds ``content`` (ends stripped)."""

    kind: Literal["file"] = "file"
    path: str
    content: str


class Missing(_Record):
    """Nothing exists at ``path`` (a file moved away)."""

    kind: Literal["missing"] = "missing"
    path: str


class EntityIs(_Record):
    """The memory graph holds entity ``name`` of ``entity_type`` whose observations include these."""

    kind: Literal["entity"] = "entity"
    name: str
    entity_type: str
    observations: tuple[str, ...] = ()


class NoEntity(_Record):
    """The memory graph holds no entity ``name``."""

    kind: Literal["no_entity"] = "no_entity"
    name: str


class RelationIs(_Record):
    """The memory graph holds the relation ``source -relation_type-> target``."""

    kind: Literal["relation"] = "relation"
    source: str
    target: str
    relation_type: str


class RefIs(_Record):
    """Branch ``ref`` exists, its tip's message is ``message`` and it holds ``files`` (repository paths)."""

    kind: Literal["ref"] = "ref"
    ref: str
    message: str
    files: dict[str, str] = Field(default_factory=dict)


class HeadIs(_Record):
    """The repository's checked-out branch is ``branch``."""

    kind: Literal["head"] = "head"
    branch: str


Expectation = Annotated[FileIs | Missing | EntityIs | NoEntity | RelationIs | RefIs | HeadIs,
                        Field(discriminator="kind")]


def _calls(value: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
    for call in value:
        if set(call) != {"tool", "arguments"} or not isinstance(call["tool"], str) \
                or not isinstance(call["arguments"], dict):
            raise ValueError(f'a call is {{"tool": name, "arguments": {{...}}}}, not {call!r}')
    return value


class RealTask(_Record):
    """A concrete request to an agent, the real server it runs against, and how success is judged."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    template: str = Field(description="The template the task was made from; the split goes by template.")
    split: Split
    server: TaskServer
    instruction: str = Field(description="What the user tells the agent (paths under /workspace).")
    files: dict[str, str] = Field(default_factory=dict, description="Relative path -> text written before "
                                  "the episode (git: the first commit; memory: the seeded memory.jsonl).")
    changes: dict[str, str] = Field(default_factory=dict, description="Written after that (git: "
                                    "uncommitted changes).")
    reference_plan: tuple[dict[str, Any], ...] = Field(min_length=1, description="Tool calls that solve "
                                                       "the task on the real server.")
    trace: tuple[dict[str, Any], ...] = Field(min_length=1, description="Conditions a solving episode's "
                                              "calls meet in order: tool name and a subset of arguments.")
    expect: tuple[Expectation, ...] = Field(min_length=1, description="What holds on the real server "
                                            "after a solving episode (and not before it).")

    _plan = field_validator("reference_plan", "trace")(_calls)

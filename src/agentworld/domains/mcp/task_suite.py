"""A suite of real MCP tasks: train an agent in simulation, evaluate it on the real servers.

Why: a simulator only sees tool calls, so each task carries a ``trace`` it can check without a server
(:func:`trace_check`); the real servers (filesystem, memory, git presets of
:mod:`agentworld.domains.mcp.servers`) are the ground truth, so each task also carries expectations on
the server's folder after the episode (:func:`check`: file contents, the memory graph in
``memory.jsonl``, git branches and commits). Tasks are split by template, not by instance: every
test task is a kind of task the agent never trained on, not merely new values of a familiar one.

>>> from agentworld.domains.mcp.task_suite import TASKS, trace_check
>>> task = TASKS[0]
>>> trace_check(task, list(task.reference_plan)).passed, trace_check(task, []).passed
(True, False)
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, NamedTuple

from agentworld.domains.actions import format_tool_action
from agentworld.domains.mcp.servers import DISPLAY_ROOT, preset
from agentworld.domains.mcp.task_records import (
    EntityIs,
    Expectation,
    FileIs,
    HeadIs,
    Missing,
    NoEntity,
    RealTask,
    RefIs,
    RelationIs,
)
from agentworld.domains.mcp.task_templates import TEMPLATES
from agentworld.errors import DataError
from agentworld.inputs import jsonl_rows, read_bytes, read_text

if TYPE_CHECKING:
    from agentworld.domains.mcp.env import McpEnvironment

__all__ = ["TASKS", "RealTask", "Verdict", "check", "check_folder", "play", "start", "test_tasks",
           "trace_check", "train_tasks"]

TASKS: tuple[RealTask, ...] = tuple(task for template in TEMPLATES for task in template.tasks())


class Verdict(NamedTuple):
    """Whether a task succeeded, and what was wrong if not (one reason per unmet condition)."""

    passed: bool
    reasons: list[str]


def train_tasks() -> tuple[RealTask, ...]:
    """Tasks of the training templates."""
    return tuple(t for t in TASKS if t.split == "train")


def test_tasks() -> tuple[RealTask, ...]:
    """Tasks of the held-out templates (kinds of task absent from training)."""
    return tuple(t for t in TASKS if t.split == "test")


def start(task: RealTask) -> McpEnvironment:
    """The task's real server, started in a fresh folder holding the task's files."""
    from agentworld.domains.mcp.env import McpEnvironment

    return McpEnvironment(task.server, files=task.files, changes=task.changes)


def play(env: McpEnvironment, calls: Sequence[Mapping[str, Any]]) -> list[str]:
    """Perform ``calls`` (``{"tool", "arguments"}``, e.g. a reference plan) and return their results."""
    return [env.step(format_tool_action(_tool(c), c.get("arguments") or {})) for c in calls]


def check(task: RealTask, env: McpEnvironment) -> Verdict:
    """Judge an episode by the real server's state after it (its folder; call before ``env.close()``)."""
    return check_folder(task, Path(env.paths.real))


def check_folder(task: RealTask, root: Path) -> Verdict:
    """Judge the state of a server folder ``root`` (shown to the agent as ``/workspace``)."""
    reasons = [reason for e in task.expect if (reason := _unmet(e, root))]
    return Verdict(not reasons, reasons)


def trace_check(task: RealTask, calls: Sequence[Mapping[str, Any]]) -> Verdict:
    """Judge an episode by its calls alone: each trace condition must be met by a call, in order.

    A call (``{"tool" or "tool_name": name, "arguments": {...}}``) meets a condition when the names
    are equal and the condition's arguments are a subset of the call's: nested objects by key, lists
    by each wanted item matching some item, strings compared stripped.
    """
    reasons, at = [], 0
    for n, want in enumerate(task.trace, 1):
        found = next((i for i in range(at, len(calls)) if _tool(calls[i]) == want["tool"]
                      and _matches(want["arguments"], calls[i].get("arguments") or {})), None)
        if found is None:
            where = "" if at == 0 else f" after call {at}"
            reasons.append(f"condition {n}: no {want['tool']} call{where} with arguments including "
                           f"{json.dumps(want['arguments'], ensure_ascii=False)}")
        else:
            at = found + 1
    return Verdict(not reasons, reasons)


def _tool(call: Mapping[str, Any]) -> str:
    return str(call.get("tool") or call.get("tool_name") or call.get("name") or "")


def _matches(want: Any, got: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and _matches(v, got[k]) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(got, list) and all(any(_matches(w, g) for g in got) for w in want)
    if isinstance(want, str):
        return isinstance(got, str) and got.strip() == want.strip()
    return bool(want == got)


def _text(text: str) -> str:
    return text.replace("\r\n", "\n").strip()


def _short(text: str, limit: int = 120) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _real(root: Path, shown: str) -> Path:
    return root / PurePosixPath(shown).relative_to(DISPLAY_ROOT)


def _unmet(e: Expectation, root: Path) -> str | None:
    if isinstance(e, FileIs):
        path = _real(root, e.path)
        if not path.is_file():
            return f"{e.path} is {'a directory' if path.is_dir() else 'missing'}, wanted a file"
        try:
            got = read_bytes(path, root=root).decode("utf-8", "replace")
        except DataError as err:
            return f"{e.path} cannot be read: {str(err).removeprefix(str(path)).lstrip(': ')}"
        return None if _text(got) == _text(e.content) else \
            f"{e.path} holds {_short(got)}, wanted {_short(e.content)}"
    if isinstance(e, Missing):
        return f"{e.path} still exists" if _real(root, e.path).exists() else None
    if isinstance(e, EntityIs | NoEntity | RelationIs):
        return _unmet_memory(e, root)
    return _unmet_git(e, root)


def _graph(root: Path) -> tuple[dict[str, dict[str, Any]], set[tuple[str, str, str]]]:
    """The memory server's graph from its ``memory.jsonl``, split on ``"\\n"`` only: the server writes
    U+2028 and U+2029 inside strings raw, which ``str.splitlines`` would take for line ends."""
    path, entities, relations = root / "memory.jsonl", {}, set()
    text = read_text(path, root=root) if path.is_file() else ""
    for _, item in jsonl_rows(text, path=f"{DISPLAY_ROOT}/memory.jsonl"):
        if item.get("type") == "entity":
            entities[item.get("name")] = item
        elif item.get("type") == "relation":
            relations.add((item.get("from"), item.get("to"), item.get("relationType")))
    return entities, relations


def _unmet_memory(e: EntityIs | NoEntity | RelationIs, root: Path) -> str | None:
    try:
        entities, relations = _graph(root)
    except (DataError, AttributeError) as err:
        return f"{DISPLAY_ROOT}/memory.jsonl is not the memory server's JSON lines: {err}"
    if isinstance(e, NoEntity):
        return f"entity {e.name!r} is still in the memory graph" if e.name in entities else None
    if isinstance(e, RelationIs):
        wanted = (e.source, e.target, e.relation_type)
        return None if wanted in relations else \
            f"relation {e.source!r} -{e.relation_type}-> {e.target!r} is not in the memory graph"
    entity = entities.get(e.name)
    if entity is None:
        return f"entity {e.name!r} is not in the memory graph"
    if entity.get("entityType") != e.entity_type:
        return f"entity {e.name!r} has type {entity.get('entityType')!r}, wanted {e.entity_type!r}"
    held = {_text(str(o)) for o in entity.get("observations") or []}
    lacking = [o for o in e.observations if _text(o) not in held]
    return f"entity {e.name!r} lacks the observations {lacking}" if lacking else None


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, env=preset("git").environment(root), text=True,
                          capture_output=True, check=False)


def _unmet_git(e: RefIs | HeadIs, root: Path) -> str | None:
    if isinstance(e, HeadIs):
        head = _git(root, "symbolic-ref", "--short", "-q", "HEAD").stdout.strip() or "a detached HEAD"
        return None if head == e.branch else f"the repository is on {head!r}, wanted branch {e.branch!r}"
    ref = f"refs/heads/{e.ref}"
    shown = _git(root, "log", "-1", "--format=%B", ref, "--")
    if shown.returncode != 0:
        return f"branch {e.ref!r} does not exist"
    if _text(shown.stdout) != _text(e.message):
        return f"the last commit on {e.ref!r} says {_short(_text(shown.stdout))}, wanted {_short(e.message)}"
    for rel, content in e.files.items():
        blob = _git(root, "show", f"{ref}:{rel}")
        if blob.returncode != 0:
            return f"{DISPLAY_ROOT}/{rel} is not committed on {e.ref!r}"
        if _text(blob.stdout) != _text(content):
            return f"{DISPLAY_ROOT}/{rel} on {e.ref!r} holds {_short(blob.stdout)}, wanted {_short(content)}"
    return None

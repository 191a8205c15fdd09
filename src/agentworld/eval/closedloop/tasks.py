"""Tasks of ``agentworld eval closed-loop``: a goal, a setup, and the check that says whether it was met.

A task runs twice from the same state — in the domain's real environment and in the simulator — so
it must say how to reach that state (``setup``: actions run first; the simulator is given their real
observations) and how to tell success on either side (``check``: one action run after the episode,
for real in the real environment and imagined by the simulator; success when some line of its
observation, stripped, equals ``expect``; without ``check`` the episode's last observation is read).
A line, not a substring: a terminal echoes the command, so ``echo ok`` would otherwise always "show"
``ok``. ``candidates`` are the actions the scripted agent (``--scripted-agent``) tries in order; an
agent endpoint chooses its own actions towards ``goal``. Actions are in the domain's own format
(terminal: a keystroke list; MCP, search, SWE: a JSON tool call; web: a BrowserGym call), checked
with the domain's parser before anything runs. ``examples/closed_loop/<domain>_tasks.jsonl`` has
tasks for every domain with a real environment.

Tasks file (JSONL, one object a line)::

    {"id": "wrong-name", "domain": "terminal", "goal": "Show the project's README.",
     "setup": [[{"keystrokes": "printf 'Run make test\\n' > README.md; clear\\n"}]],
     "candidates": [[{"keystrokes": "cat README\\n"}], [{"keystrokes": "cat README.md\\n"}]],
     "expect": "Run make test"}
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld.errors import DataError
from agentworld.eval.agentpred.tasks import MAX_STEPS_LIMIT, MAX_TASKS_FILE_BYTES

DEFAULT_MAX_STEPS = 6
KEYS = frozenset({"id", "domain", "goal", "setup", "candidates", "check", "expect", "errors", "max_steps",
                  "spec"})
SPEC_KEYS = ("name", "tools", "controls")
"""What a task may set of the simulator's world spec (the domain and the first screen come from the task
and the real environment)."""


@dataclass(frozen=True)
class ClosedLoopTask:
    """One task; ``check`` None means the episode's last observation is what ``expect`` is looked for in."""

    id: str
    domain: str
    goal: str
    expect: str
    setup: tuple[Any, ...] = ()
    candidates: tuple[Any, ...] = ()
    check: Any = None
    errors: tuple[str, ...] = ()
    """Regular expressions (``re.M``) that also mark an observation as an error for the scripted agent."""
    max_steps: int = DEFAULT_MAX_STEPS
    spec: dict[str, Any] = dataclasses.field(default_factory=dict)
    """World-spec fields for the simulator (``SPEC_KEYS``: MCP tools, facts, faults), checked on load."""


def succeeded(task: ClosedLoopTask, observation: str) -> bool:
    """Whether ``observation`` (the check's, or the last one) shows ``expect`` as a line of its own."""
    return any(line.strip() == task.expect.strip() for line in observation.splitlines())


def parse_task(item: Any, *, path: str, line: int | None) -> ClosedLoopTask:
    """One task object, validated (actions by the domain's parser).

    Raises:
        DataError: naming the file, line, task id and field.
    """
    from agentworld.domains.hooks import ActionError, domain_actions
    from agentworld.eval.agentpred.tasks import _real_domains

    task_id = item.get("id") if isinstance(item, dict) and isinstance(item.get("id"), str) else None

    def fail(message: str, field: str | None = None) -> DataError:
        return DataError(message, path=path, line=line, sample_id=task_id, field=field)

    if not isinstance(item, dict):
        raise fail("expected a JSON object (id, domain, goal, expect, setup, candidates, check)")
    unknown = sorted(set(item) - KEYS)
    if unknown:
        raise fail(f"unknown key; known: {', '.join(sorted(KEYS))}", unknown[0])
    if not task_id or not task_id.strip():
        raise fail("id must be a non-empty string", "id")
    real = _real_domains()
    domain = item.get("domain")
    if domain not in real:
        raise fail(f"domain must be one with a real environment: {', '.join(sorted(real))}", "domain")
    actions = domain_actions(domain)

    def one(value: Any, field: str) -> Any:
        try:
            actions.parse(value)
        except ActionError as exc:
            raise fail(str(exc), field) from None
        return value

    def action_list(field: str) -> tuple[Any, ...]:
        value = item.get(field, [])
        if not isinstance(value, list):
            raise fail("must be a list of actions", field)
        return tuple(one(action, f"{field}[{i}]") for i, action in enumerate(value))

    for field in ("goal", "expect"):
        if not isinstance(item.get(field), str) or not item[field].strip():
            raise fail(f"{field} must be a non-empty string", field)
    max_steps = item.get("max_steps", DEFAULT_MAX_STEPS)
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or not 1 <= max_steps <= MAX_STEPS_LIMIT:
        raise fail(f"max_steps must be an integer in 1..{MAX_STEPS_LIMIT}", "max_steps")
    check = one(item["check"], "check") if item.get("check") is not None else None
    errors = item.get("errors", [])
    if not isinstance(errors, list) or not all(isinstance(p, str) for p in errors):
        raise fail("errors must be a list of regular expressions", "errors")
    for index, pattern in enumerate(errors):
        try:
            re.compile(pattern, re.M)
        except re.error as exc:
            raise fail(f"not a regular expression ({exc})", f"errors[{index}]") from None
    return ClosedLoopTask(id=task_id, domain=domain, goal=item["goal"], expect=item["expect"],
                          setup=action_list("setup"), candidates=action_list("candidates"), check=check,
                          errors=tuple(errors), max_steps=max_steps, spec=world_spec(item.get("spec"), fail))


def world_spec(value: Any, fail: Any) -> dict[str, Any]:
    """A task's ``spec``, checked as :class:`~agentworld.domains.spec.WorldSpec` fields (``fail(message,
    field)`` makes the error)."""
    from pydantic import ValidationError

    from agentworld.domains.spec import WorldSpec

    if value is None:
        return {}
    if not isinstance(value, dict):
        raise fail(f"spec must be an object with some of {', '.join(SPEC_KEYS)}", "spec")
    unknown = sorted(set(value) - set(SPEC_KEYS))
    if unknown:
        raise fail(f"unknown key; a task's spec takes {', '.join(SPEC_KEYS)}", f"spec.{unknown[0]}")
    try:
        WorldSpec(**value)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise fail(error["msg"], f"spec.{where}") from None
    return dict(value)


def load_tasks(path: Path) -> list[ClosedLoopTask]:
    """Read a tasks JSONL file (blank lines skipped).

    Raises:
        DataError: a missing, oversized or empty file, a duplicate id, or a bad line (file:line, id, field).
    """
    from agentworld.domains.records_file import read_records

    return read_records(path, lambda item, line: parse_task(item, path=str(path), line=line), lambda t: t.id,
                        what="task", key="id", max_bytes=MAX_TASKS_FILE_BYTES)

"""Tasks of ``agentworld eval agent-predictions``: what runs for real while the agent predicts.

A task is one episode in a domain's real environment: ``setup`` actions run first (shown to the
agent, not scored), then either the fixed ``steps`` (the agent only predicts what each will show) or,
with a ``goal`` and no steps, up to ``max_steps`` actions the agent chooses itself. Actions are in the
domain's own format (terminal: a keystroke list), checked with the domain's action parser before
anything runs. Built-in tasks come from each domain's plugin (``prediction_tasks``: the
terminal's held-out scenarios), so nothing here knows a domain by name.

Tasks file (JSONL, one object a line)::

    {"id": "greet", "domain": "terminal", "setup": [[{"keystrokes": "mkdir d\\n"}]],
     "steps": [[{"keystrokes": "ls\\n", "duration": 0.5}]]}
    {"id": "make-file", "domain": "terminal", "goal": "create notes.txt holding 'hi'", "max_steps": 4}
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld.errors import AgentWorldError, DataError

DEFAULT_MAX_STEPS = 8
MAX_STEPS_LIMIT = 200
MAX_TASKS_FILE_BYTES = 64 << 20
KEYS = frozenset({"id", "domain", "setup", "steps", "goal", "max_steps"})


@dataclass(frozen=True)
class PredictionTask:
    """One task; ``steps`` None means the agent chooses its actions (towards ``goal``)."""

    id: str
    domain: str
    setup: tuple[Any, ...] = ()
    steps: tuple[Any, ...] | None = None
    goal: str = ""
    max_steps: int = DEFAULT_MAX_STEPS

    @property
    def planned_steps(self) -> int:
        """Scored steps at most (for the progress bar)."""
        return len(self.steps) if self.steps is not None else self.max_steps


def _real_domains() -> dict[str, Any]:
    from agentworld.domains.base import plugins

    return {name: p for name, p in plugins().items() if p.environment}


def parse_task(item: Any, *, path: str, line: int | None) -> PredictionTask:
    """One task object, validated (actions by the domain's parser).

    Raises:
        DataError: naming the file, line, task id and field.
    """
    from agentworld.domains.hooks import ActionError, domain_actions

    task_id = item.get("id") if isinstance(item, dict) and isinstance(item.get("id"), str) else None

    def fail(message: str, field: str | None = None) -> DataError:
        return DataError(message, path=path, line=line, sample_id=task_id, field=field)

    if not isinstance(item, dict):
        raise fail("expected a JSON object (id, domain, setup, steps or goal)")
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

    def action_list(field: str, required: bool) -> tuple[Any, ...]:
        value = item.get(field, [])
        if not isinstance(value, list) or (required and not value):
            raise fail("must be a " + ("non-empty " if required else "") + "list of actions", field)
        for index, action in enumerate(value):
            try:
                actions.parse(action)
            except ActionError as exc:
                raise fail(str(exc), f"{field}[{index}]") from None
        return tuple(value)

    goal = item.get("goal", "")
    if not isinstance(goal, str):
        raise fail("goal must be a string", "goal")
    max_steps = item.get("max_steps", DEFAULT_MAX_STEPS)
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or not 1 <= max_steps <= MAX_STEPS_LIMIT:
        raise fail(f"max_steps must be an integer in 1..{MAX_STEPS_LIMIT}", "max_steps")
    steps = action_list("steps", required=True) if "steps" in item else None
    if steps is None and not goal.strip():
        raise fail("give the fixed actions as steps, or a goal for the agent to choose actions towards",
                   "steps")
    return PredictionTask(id=task_id, domain=domain, setup=action_list("setup", required=False), steps=steps,
                          goal=goal, max_steps=len(steps) if steps is not None else max_steps)


def _unique(tasks: Iterable[tuple[PredictionTask, str, int | None]]) -> list[PredictionTask]:
    seen: set[str] = set()
    out: list[PredictionTask] = []
    for task, path, line in tasks:
        if task.id in seen:
            raise DataError("duplicate task id", path=path, line=line, sample_id=task.id, field="id")
        seen.add(task.id)
        out.append(task)
    return out


def load_tasks(path: Path) -> list[PredictionTask]:
    """Read a tasks JSONL file (blank lines skipped).

    Raises:
        DataError: a missing, oversized or empty file, or a bad line (file:line, task id, field).
    """
    from agentworld.domains.records_file import read_records

    return read_records(path, lambda item, line: parse_task(item, path=str(path), line=line), lambda t: t.id,
                        what="task", key="id", max_bytes=MAX_TASKS_FILE_BYTES)


def builtin_tasks(domains: Iterable[str] = ()) -> list[PredictionTask]:
    """The held-out tasks every real domain's plugin offers (``prediction_tasks``).

    Raises:
        AgentWorldError: a domain asked for that offers none.
    """
    from agentworld.domains.base import resolve

    wanted = set(domains)
    offering = {name: p for name, p in _real_domains().items() if p.prediction_tasks}
    missing = sorted(wanted - set(offering))
    if missing:
        raise AgentWorldError(f"no built-in prediction tasks for {', '.join(missing)} (built-in: "
                              f"{', '.join(sorted(offering)) or 'none'}); give --tasks FILE")
    parsed: list[tuple[PredictionTask, str, int | None]] = []
    for name, found in sorted(offering.items()):
        if wanted and name not in wanted:
            continue
        source = f"built-in {name} tasks"
        for item in resolve(found.prediction_tasks or "")():
            parsed.append((parse_task(item, path=source, line=None), source, None))
    return _unique(parsed)

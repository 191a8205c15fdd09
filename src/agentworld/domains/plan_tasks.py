"""What a domain offers the planner benchmark: tasks whose obvious action fails for real.

Why a record of its own: measuring predict-before-acting needs tasks, a real environment with each
task's setup done, and a success check on that real environment afterwards — all specific to a
domain. A domain package exposes one :class:`PlanSuite` (``DomainPlugin.plan_tasks``) and
:mod:`agentworld.plan.bench` runs any of them without knowing which domain it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["PlanCandidate", "PlanSuite", "PlanTask"]


class PlanCandidate(Protocol):
    """An action the agent may take, and whether it accomplishes its task for real."""

    @property
    def works(self) -> bool: ...

    def action(self) -> Any: ...


class PlanTask(Protocol):
    """A task: its candidates (the futile one first) and the failure patterns of its screens."""

    @property
    def name(self) -> str: ...

    @property
    def candidates(self) -> Sequence[PlanCandidate]: ...

    @property
    def errors(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class PlanSuite:
    """A domain's futile-action tasks with how to run them for real.

    Attributes:
        tasks: the tasks, names unique; each lists a futile candidate first and a working one.
        open_environment: ``(task, seed, **options)`` → a fresh real environment (the domain's own,
            with ``step``/``close``) with the task's setup done.
        solved: ``(task, env, observations)`` → whether the task is done, checked on the real
            environment after the agent's real steps (their observations given oldest first).
    """

    tasks: tuple[Any, ...]
    open_environment: Callable[..., Any]
    solved: Callable[[Any, Any, Sequence[str]], bool]

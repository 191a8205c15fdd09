"""Plain records for the pipeline's hot path, with the pydantic records at the edges.

Why: building and copying pydantic models (validation, ``model_copy``) cost more than all the
pipeline's own work on a turn. Inside :func:`agentworld.data.pipeline.run_pipeline` a trajectory
and its samples therefore travel as the plain records below, which carry the same attributes as
:class:`~agentworld.schema.Trajectory`, :class:`~agentworld.schema.Turn`,
:class:`~agentworld.data.types.TrainSample`, :class:`~agentworld.data.types.LossMask` and
:class:`~agentworld.data.types.TurnStats`: the steps read either kind alike, and the public
functions still take and return the pydantic ones (:meth:`PlainSample.to_model` and friends turn
a plain record into its model, with the same field values).

A plain sample belongs to the stream that made it: the mask and split steps set its ``mask`` and
``split`` in place instead of copying it. The samples of one trajectory share one list of its
(action, observation) ``pairs``; a sample's ``history`` is the part before its turn, sliced when
asked for. The steps that carry state from one sample to the next (the incremental dedup keys,
the masking context, the export rows) recognise a trajectory by that list and a turn by its index.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from agentworld.data.types import LossMask, TrainSample, TurnStats
from agentworld.schema import Trajectory, Turn


class PlainTurn(NamedTuple):
    """:class:`~agentworld.schema.Turn`'s fields."""

    action: str
    observation: str
    meta: dict[str, Any]

    def to_model(self) -> Turn:
        return Turn(action=self.action, observation=self.observation, meta=self.meta)


@dataclass(slots=True)
class PlainTrajectory:
    """:class:`~agentworld.schema.Trajectory`'s fields, its turns plain."""

    id: str
    domain: str
    system_prompt: str
    turns: tuple[PlainTurn, ...]
    task: str | None
    meta: dict[str, Any]

    def to_model(self) -> Trajectory:
        return Trajectory(id=self.id, domain=self.domain, task=self.task, system_prompt=self.system_prompt,
                          turns=tuple(t.to_model() for t in self.turns), meta=self.meta)


class PlainStats(NamedTuple):
    """:class:`~agentworld.data.types.TurnStats`'s fields, in its order."""

    overlap: float
    novelty: float
    jaccard: float
    length_ratio: float
    obs_tokens: int
    action_tokens: int

    def to_model(self) -> TurnStats:
        return TurnStats(overlap=self.overlap, novelty=self.novelty, jaccard=self.jaccard,
                         length_ratio=self.length_ratio, obs_tokens=self.obs_tokens,
                         action_tokens=self.action_tokens)


class PlainMask(NamedTuple):
    """:class:`~agentworld.data.types.LossMask`'s fields, in its order."""

    category: str
    keep: bool
    keep_ratio: float
    stats: PlainStats | None = None

    def to_model(self) -> LossMask:
        stats = None if self.stats is None else self.stats.to_model()
        return LossMask(category=self.category, keep=self.keep,
                        keep_ratio=self.keep_ratio, stats=stats)

    def to_row(self) -> dict[str, Any]:
        """``LossMask.model_dump(mode="json")``."""
        return {"category": self.category, "keep": self.keep, "keep_ratio": self.keep_ratio,
                "stats": None if self.stats is None else self.stats._asdict()}


class PlainSample:
    """:class:`~agentworld.data.types.TrainSample`'s fields, ``history`` sliced from ``pairs`` (see above)."""

    __slots__ = ("action", "domain", "id", "mask", "meta", "observation", "pairs", "source", "split",
                 "system", "task", "total_turns", "trajectory_id", "turn")

    def __init__(self, id: str, trajectory_id: str, turn: int, domain: str, task: str | None, source: str,
                 system: str, pairs: list[tuple[str, str]], meta: dict[str, Any]) -> None:
        self.id, self.trajectory_id, self.turn, self.domain, self.task = id, trajectory_id, turn, domain, task
        self.source, self.system, self.pairs, self.meta = source, system, pairs, meta
        self.action, self.observation = pairs[turn - 1]
        self.total_turns = len(pairs)
        self.mask: PlainMask | LossMask | None = None
        self.split: str | None = None

    @property
    def history(self) -> list[tuple[str, str]]:
        """The pairs before this turn."""
        return self.pairs[: self.turn - 1]

    def to_model(self) -> TrainSample:
        """The :class:`TrainSample` with these field values (validated, as ``expand`` builds it)."""
        extra: dict[str, Any] = {}
        if self.mask is not None:
            extra["mask"] = self.mask.to_model() if isinstance(self.mask, PlainMask) else self.mask
        if self.split is not None:
            extra["split"] = self.split
        return TrainSample(id=self.id, trajectory_id=self.trajectory_id, turn=self.turn, domain=self.domain,
                           task=self.task, source=self.source, system=self.system, history=self.history,
                           action=self.action, observation=self.observation, total_turns=self.total_turns,
                           meta=self.meta, **extra)

    def to_row(self) -> dict[str, Any]:
        """``self.to_model().model_dump(mode="json")``, without building the model."""
        loss = self.mask
        return {"id": self.id, "trajectory_id": self.trajectory_id, "turn": self.turn, "domain": self.domain,
                "task": self.task, "source": self.source, "system": self.system,
                "history": [list(pair) for pair in self.history], "action": self.action,
                "observation": self.observation, "total_turns": self.total_turns,
                "mask": None if loss is None else
                loss.to_row() if isinstance(loss, PlainMask) else loss.model_dump(mode="json"),
                "split": self.split, "meta": to_jsonable_python(self.meta)}


Record = TypeVar("Record")


def replaced(record: Record, **changes: Any) -> Record:
    """A copy of a pydantic record, a plain turn or a plain trajectory with some fields changed."""
    if isinstance(record, BaseModel):
        return record.model_copy(update=changes)
    if isinstance(record, tuple):
        return record._replace(**changes)  # type: ignore[attr-defined]
    return dataclasses.replace(record, **changes)  # type: ignore[type-var]


def to_model(record: Any) -> Any:
    """The pydantic model of a plain record; a pydantic one as it is."""
    return record if isinstance(record, BaseModel) else record.to_model()

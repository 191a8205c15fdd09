"""AgentWorldBench rows as ingest reads them: a plain type check, and joining without re-serialising.

:func:`agentworld.schema.parse_row` validates a row through pydantic and
:func:`agentworld.schema.join_samples` re-serialises every row (``to_row``) and its whole
prompt/response lists (the grouping key) — work that grows with the square of the trajectory
length. Rows read from JSON are nearly always plainly valid (exact JSON types, ``turn_idx`` in
range, a known domain); :meth:`BenchRow.checked` recognises those with a few type tests, and
anything else goes through ``parse_row`` as before (so its errors, and its coercions, are
unchanged). :func:`join_rows` builds the same trajectory ``join_samples`` does for one group.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, NamedTuple

from agentworld import schema
from agentworld.schema import Trajectory, Turn

_STR_ONLY = frozenset({str})
_SHARED_KEYS = frozenset(schema._SHARED_KEYS)  # the fields join_samples leaves out of meta["row"]


class BenchRow(NamedTuple):
    """One row: its grouping key, turn, id, the row as ``BenchSample.to_row`` gives it, its ``meta``."""

    key: tuple[str, str, list[str], list[str]]
    """(task, system_str, prompt, response): consecutive rows of one trajectory share it."""
    turn_idx: int
    id: str
    full: dict[str, Any]
    meta: Any

    @classmethod
    def checked(cls, raw: Any, known_domains: Collection[str] | None) -> BenchRow | None:
        """The row if ``parse_row`` would take it unchanged (exact types, in range), else None."""
        if type(raw) is not dict:
            return None
        task, sid, system = raw.get("task"), raw.get("id"), raw.get("system_str")
        prompt, response, turn_idx = raw.get("prompt"), raw.get("response"), raw.get("turn_idx", 1)
        total, current = raw.get("total_turns"), raw.get("current_prompt", "")
        if not (type(task) is str and type(sid) is str and type(system) is str and type(current) is str
                and type(prompt) is list and type(response) is list and type(turn_idx) is int
                and 1 <= turn_idx <= len(prompt) and turn_idx <= len(response)
                and (total is None or type(total) is int)
                and set(map(type, prompt)) <= _STR_ONLY and set(map(type, response)) <= _STR_ONLY):
            return None
        if known_domains is not None and task.rpartition("/")[2] not in known_domains:
            return None
        return cls((task, system, prompt, response), turn_idx, sid, dict(raw), raw.get("meta"))

    @classmethod
    def of(cls, sample: schema.BenchSample) -> BenchRow:
        """The row of a validated sample."""
        return cls((sample.task, sample.system_str, sample.prompt, sample.response), sample.turn_idx,
                   sample.id, sample.to_row(), getattr(sample, "meta", None))


def join_rows(group: Sequence[BenchRow], meta: dict[str, Any]) -> Trajectory:
    """The trajectory of one group (same key, distinct turns), as ``join_samples`` makes it, with ``meta``."""
    first = group[0]
    task, system, prompts, responses = first.key
    by_turn = {r.turn_idx: r for r in group}
    turns = []
    for idx, (action, observation) in enumerate(zip(prompts, responses, strict=False), start=1):
        turn_meta: dict[str, Any] = {}
        row = by_turn.get(idx)
        if row is not None:
            saved = {k: v for k, v in row.full.items() if k not in _SHARED_KEYS}
            saved["_keys"] = list(row.full)
            turn_meta["row"] = saved
        turns.append(Turn(action=action, observation=observation, meta=turn_meta))
    head, _, tail = first.id.rpartition("-t")
    return Trajectory(id=head if head and tail.isdigit() else first.id, domain=task.split("/")[-1], task=task,
                      system_prompt=system, turns=tuple(turns), meta=meta)

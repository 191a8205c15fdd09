"""AgentWorldBench rows as ingest reads them: a plain type check, and joining without re-serialising.

:func:`agentworld.schema.parse_row` validates a row through pydantic and
:func:`agentworld.schema.join_samples` re-serialises every row (``to_row``) and its whole
prompt/response lists (the grouping key) — work that grows with the square of the trajectory
length. Rows read from JSON are nearly always plainly valid (exact JSON types, ``turn_idx`` in
range, a known domain); :meth:`BenchRow.checked` recognises those with a few type tests, and
anything else goes through ``parse_row`` as before (so its errors, and its coercions, are
unchanged). :func:`join_rows` builds the same trajectory ``join_samples`` does for one group, as a
plain record (:mod:`agentworld.data.records`).
"""

from __future__ import annotations

import mmap
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from agentworld import schema
from agentworld.data.records import PlainTrajectory, PlainTurn
from agentworld.schema import Trajectory, Turn, trajectory_id

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


def join_rows(group: Sequence[BenchRow], meta: dict[str, Any]) -> PlainTrajectory:
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
        turns.append(PlainTurn(action, observation, turn_meta))
    return PlainTrajectory(trajectory_id(first.id), task.split("/")[-1], system, tuple(turns), task, meta)


def is_incremental(row: BenchRow) -> bool:
    """A row written as its session went (``meta["incremental"]``): it holds turns 1…turn_idx only."""
    return type(row.meta) is dict and row.meta.get("incremental") is True and row.turn_idx == len(row.key[2])


def may_hold_incremental_rows(path: Path) -> bool:
    """Whether the key ``"incremental"`` occurs anywhere in ``path`` (a byte scan, no parsing).

    A session of incremental rows may be spread over the whole file, so such a file is read
    whole, never in byte ranges (a false positive only costs the parallelism).
    """
    if path.stat().st_size == 0:
        return False
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return data.find(b'"incremental"') != -1


class OpenSessions:
    """The sessions of incremental rows (``agentworld record mcp``), each known by its latest row.

    Why: rows of concurrent sessions interleave, and any session may go on until the file ends,
    so a session is whole only at the end of the file. Its latest row holds all of it, so only
    where that row is gets kept (a byte offset; the row itself where there is none, as in a JSON
    array file): a few dozen bytes per session, whatever its length.
    """

    def __init__(self) -> None:
        self._latest: list[tuple[int, int | BenchRow]] = []
        self._index: dict[str, int] = {}

    def add(self, row: BenchRow, offset: int | None) -> None:
        """Note a row; one whose turn does not follow its session's latest starts a new session."""
        tid = trajectory_id(row.id)
        where: int | BenchRow = row if offset is None else offset
        i = self._index.get(tid)
        if i is not None and row.turn_idx > self._latest[i][0]:
            self._latest[i] = (row.turn_idx, where)
        else:
            self._index[tid] = len(self._latest)
            self._latest.append((row.turn_idx, where))

    def latest_rows(self, fetch: Callable[[int], BenchRow]) -> Iterator[BenchRow]:
        """Each session's latest row, in the order the sessions began (``fetch`` reads one at an offset)."""
        for _, where in self._latest:
            yield fetch(where) if isinstance(where, int) else where


def session_trajectory(row: BenchRow, meta: dict[str, Any]) -> Trajectory:
    """The trajectory an incremental row holds: turns 1…turn_idx, no per-row details."""
    task, system, prompts, responses = row.key
    pairs = zip(prompts, responses[:len(prompts)], strict=True)
    turns = tuple(Turn(action=action, observation=observation) for action, observation in pairs)
    return Trajectory(id=trajectory_id(row.id), domain=task.split("/")[-1], task=task, system_prompt=system,
                      turns=turns, meta=meta)

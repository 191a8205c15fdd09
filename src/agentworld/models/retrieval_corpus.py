"""Where the retrieval world model's transitions come from: recordings of any domain, as rows.

A corpus is any mix of AgentWorldBench JSONL files (recorder output included), unified trajectory
JSONL files (``agentworld data convert`` output), folders of such files, and in-memory rows or
trajectories. Everything becomes AgentWorldBench rows (:class:`~agentworld.schema.BenchSample`), so a
trajectory stored either way gives the same transitions. Rows are read with
:func:`~agentworld.schema.read_bench_jsonl`, trajectories validated as
:class:`~agentworld.schema.Trajectory`; bad input raises a :class:`~agentworld.errors.DataError` naming
the file, line and field, and a file in another format says how to convert it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from agentworld.domains.registry import domain_names
from agentworld.errors import DataError
from agentworld.inputs import lines
from agentworld.schema import (
    BenchSample,
    Trajectory,
    discover_data,
    parse_row,
    read_bench_jsonl,
)

CorpusItem = str | Path | BenchSample | Trajectory | dict[str, Any]
"""A file or folder, an AgentWorldBench row (dict or :class:`BenchSample`), or a :class:`Trajectory`."""


def trajectory_rows(traj: Trajectory) -> list[BenchSample]:
    """The AgentWorldBench rows of a trajectory, their ``task`` its domain (a free-form task names none)."""
    return traj.model_copy(update={"task": None}).samples()


def _json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line, record)`` for each non-blank line of a JSONL file; malformed JSON is a located error."""
    for lineno, _, raw in lines(path, what="corpus file"):
        try:
            yield lineno, orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise DataError(f"malformed JSON: {exc}", path=str(path), line=lineno) from None


def _unified_rows(path: Path) -> Iterator[BenchSample]:
    known = domain_names()
    for line, row in _json_lines(path):
        sid = str(row["id"]) if isinstance(row, dict) and "id" in row else None
        try:
            traj = Trajectory.model_validate(row)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise DataError(err["msg"], path=str(path), line=line, sample_id=sid,
                            field=".".join(str(p) for p in err["loc"]) or None) from None
        if traj.domain not in known:
            raise DataError(f"unknown domain {traj.domain!r}; known: {', '.join(known)}",
                            path=str(path), line=line, sample_id=sid, field="domain")
        yield from trajectory_rows(traj)


def _bench_row(record: Any) -> bool:
    """An AgentWorldBench row (what the shipped corpus and the recorders hold)."""
    return isinstance(record, dict) and {"prompt", "response", "system_str"} <= record.keys()


def _unified(record: Any) -> bool:
    """A unified trajectory, as ``agentworld data convert`` writes them."""
    return isinstance(record, dict) and {"turns", "system_prompt", "domain"} <= record.keys()


def file_rows(path: Path) -> Iterator[BenchSample]:
    """The rows of one AgentWorldBench or unified-trajectory JSONL file (an empty file has none).

    Other formats (chat logs, generic rows, JSON arrays) are an error that says how to convert them:
    telling which format a file is in is the data pipeline's business, which the models do not import.
    """
    first = next(_json_lines(path), None)
    if first is None:
        return
    if _bench_row(first[1]):
        yield from read_bench_jsonl(path, known_domains=domain_names())
    elif _unified(first[1]):
        yield from _unified_rows(path)
    else:
        raise DataError("neither AgentWorldBench rows nor unified trajectories; convert it first (the format "
                        f"is detected): agentworld data convert --data {path} --out corpus.jsonl",
                        path=str(path), line=first[0])


def corpus_rows(corpus: Iterable[CorpusItem]) -> Iterator[BenchSample]:
    """Every row of a corpus, in order (files and folders read lazily, one file at a time)."""
    for item in corpus:
        if isinstance(item, BenchSample):
            yield item
        elif isinstance(item, Trajectory):
            yield from trajectory_rows(item)
        elif isinstance(item, dict):
            yield parse_row(item, known_domains=domain_names())
        else:
            for file in discover_data([item], pattern="*.jsonl"):  # recordings need no naming rule
                yield from file_rows(file)


def describe_corpus(corpus: Sequence[CorpusItem]) -> str:
    """Short words for where a corpus came from, for error messages."""
    paths = [str(item) for item in corpus if isinstance(item, str | Path)]
    rows = len(corpus) - len(paths)
    parts = paths[:3] + ([f"{len(paths) - 3} more"] if len(paths) > 3 else [])
    return ", ".join(parts + ([f"{rows} rows given in memory"] if rows else [])) or "nothing"


def default_corpus() -> list[Path]:
    """Every domain's shipped corpus (the packages' ``corpus.jsonl``), when installed."""
    from agentworld.corpus import shipped_corpora

    return list(shipped_corpora().values())

"""Where the retrieval world model's transitions come from: recordings of any domain, as rows.

A corpus is any mix of AgentWorldBench JSONL files (recorder output included), unified trajectory
JSONL files (``agentworld data convert`` output), folders of such files, and in-memory rows or
trajectories. Everything becomes AgentWorldBench rows (:class:`~agentworld.schema.BenchSample`), so a
trajectory stored either way gives the same transitions. Files are read with the project's own
readers (:func:`~agentworld.schema.read_bench_jsonl`; ingest's format detection and record reader for
anything else), and bad input raises a :class:`~agentworld.errors.DataError` naming the file, line
and field.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from agentworld.domains.registry import domain_names
from agentworld.errors import DataError
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


def _unified_rows(path: Path) -> Iterator[BenchSample]:
    from agentworld.data.ingest import records

    for line, _, row in records(path):
        sid = str(row["id"]) if isinstance(row, dict) and "id" in row else None
        try:
            traj = Trajectory.model_validate(row)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise DataError(err["msg"], path=str(path), line=line, sample_id=sid,
                            field=".".join(str(p) for p in err["loc"]) or None) from None
        known = domain_names()
        if traj.domain not in known:
            raise DataError(f"unknown domain {traj.domain!r}; known: {', '.join(known)}",
                            path=str(path), line=line, sample_id=sid, field="domain")
        yield from trajectory_rows(traj)


def _first_line(path: Path) -> bytes | None:
    with open(path, "rb") as handle:
        return next((line for line in handle if not line.isspace()), None)


def _bench_row(line: bytes) -> bool:
    """Whether a line reads as an AgentWorldBench row (what the shipped corpus holds: no format detection,
    which would import the data pipeline)."""
    try:
        row = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(row, dict) and {"prompt", "response", "system_str"} <= row.keys()


def file_rows(path: Path) -> Iterator[BenchSample]:
    """The rows of one AgentWorldBench or unified-trajectory JSONL file (an empty file has none)."""
    first = _first_line(path)
    if first is None:
        return
    if _bench_row(first):
        yield from read_bench_jsonl(path, known_domains=domain_names())
        return
    from agentworld.data.ingest import detect_format

    fmt = detect_format(path)
    if fmt == "unified":
        yield from _unified_rows(path)
    else:
        raise DataError(f"reads as {fmt!r} logs, not AgentWorldBench rows or unified trajectories; convert "
                        f"it first: agentworld data convert --in {path} --out corpus.jsonl", path=str(path))


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

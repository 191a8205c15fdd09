"""Planning the scale-out: byte ranges of the inputs, cut only where a new trajectory begins.

See :mod:`agentworld.data.scale` for why the cuts keep the output identical to the sequential run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

import orjson
from pydantic import BaseModel

from agentworld import schema
from agentworld.data.bench_rows import may_hold_incremental_rows
from agentworld.data.ingest import array_document, detect_format
from agentworld.data.pipeline import PipelineConfig
from agentworld.domains import domain_names
from agentworld.errors import DataError

BENCH_FORMATS = frozenset({"agentworld-bench", "recording"})
LINE_FORMATS = frozenset({"unified", "generic", "openai-chat"})
INDEXED_FORMATS = frozenset({"generic", "openai-chat"})
"""Converters that name id-less records by their index in the file (the index must be exact)."""


class Shard(BaseModel):
    """One byte range ``[start, end)`` of one input, aligned on trajectory boundaries."""

    index: int
    input_index: int
    path: str
    format: str
    start: int = 0
    end: int = -1
    """-1: to the end of the file (also the value for a whole-file shard)."""
    whole: bool = False
    """Read by the converter itself (JSON arrays, third-party formats): no range is applied."""
    index_offset: int = 0
    """Records before ``start`` (only meaningful for :data:`INDEXED_FORMATS`)."""


def _resolved_format(path: Path, fmt: str) -> str:
    return detect_format(path) if fmt == "auto" else fmt


def _bench_ident(raw: bytes, known_domains: Sequence[str] | None) -> tuple[bytes, str] | None:
    """(group key, trajectory id) of a bench row, or None when the converter would skip the line."""
    if not raw.strip():
        return None
    try:
        sample = schema.parse_row(orjson.loads(raw), known_domains=known_domains)
    except (orjson.JSONDecodeError, DataError):
        return None
    key = hashlib.blake2b(orjson.dumps([sample.task, sample.system_str, sample.prompt,
                                        sample.response])).digest()
    head, _, tail = sample.id.rpartition("-t")
    return key, head if head and tail.isdigit() else sample.id


def _line_ident(raw: bytes, where: int) -> tuple[Any, ...] | None:
    """Explicit ids of a one-record line; records without any are unique (named by position)."""
    if not raw.strip():
        return None
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if isinstance(obj, dict):
        ids = tuple(str(obj.get(k)) for k in ("id", "task_id", "trial"))
        if any(v != "None" for v in ids):
            return ids
    return ("@", where)


def _safe_cut(handle: BinaryIO, approx: int, size: int, fmt: str, options: dict[str, Any]) -> int:
    """The first line start at or after ``approx`` where a new trajectory begins (``size`` if none)."""
    known = options.get("known_domains") or domain_names()
    handle.seek(max(approx - 1, 0))
    if approx > 0:
        handle.readline()  # to the next line start (a no-op read of "\n" when approx already is one)
    pos = handle.tell()
    prev_raw = handle.readline()
    prev_at = pos
    while True:
        pos = handle.tell()
        if pos >= size:
            return size
        raw = handle.readline()
        if fmt in BENCH_FORMATS:
            a, b = _bench_ident(prev_raw, known), _bench_ident(raw, known)
            if a is not None and b is not None and a[0] != b[0] and a[1] != b[1]:
                return pos
        else:
            c, d = _line_ident(prev_raw, prev_at), _line_ident(raw, pos)
            if c is not None and d is not None and c != d:
                return pos
        prev_raw, prev_at = raw, pos


def _count_records(path: Path, cuts: list[int]) -> list[int]:
    """Non-blank lines before each cut: the converters' record index there (barring malformed lines)."""
    counts: list[int] = []
    n = 0
    with open(path, "rb") as handle:
        pos = 0
        targets = iter(cuts)
        target = next(targets, None)
        for raw in handle:
            while target is not None and pos >= target:
                counts.append(n)
                target = next(targets, None)
            if target is None:
                break
            if raw.strip():
                n += 1
            pos += len(raw)
        while target is not None:
            counts.append(n)
            target = next(targets, None)
    return counts


def plan_shards(config: PipelineConfig, shards: int, *, min_shard_bytes: int = 1 << 20) -> list[Shard]:
    """Cut the inputs into about ``shards`` byte ranges (in proportion to file size), in input order.

    Args:
        config: The pipeline config; ``format: auto`` inputs are resolved here, once.
        shards: Target number of shards over all inputs (more than the workers, for balance).
        min_shard_bytes: No shard is planned smaller than this (worker start-up is not free).
    """
    sizes = [spec.path.stat().st_size if spec.path.is_file() else 0 for spec in config.inputs]
    total = max(sum(sizes), 1)
    out: list[Shard] = []
    for i, (spec, size) in enumerate(zip(config.inputs, sizes, strict=True)):
        if not spec.path.is_file():  # let the worker raise the pipeline's own error
            out.append(Shard(index=len(out), input_index=i, path=str(spec.path), format=spec.format,
                             whole=True))
            continue
        fmt = _resolved_format(spec.path, spec.format)
        rangeable = (fmt in BENCH_FORMATS or fmt in LINE_FORMATS) \
            and not array_document(spec.path) \
            and not (fmt == "recording" and may_hold_incremental_rows(spec.path))
        want = min(max(1, round(shards * size / total)), max(1, size // max(min_shard_bytes, 1)))
        if not rangeable or want == 1:
            out.append(Shard(index=len(out), input_index=i, path=str(spec.path), format=fmt, whole=True))
            continue
        cuts: list[int] = []
        with open(spec.path, "rb") as handle:
            for k in range(1, want):
                approx = size * k // want
                if cuts and approx <= cuts[-1]:
                    continue
                cut = _safe_cut(handle, approx, size, fmt, spec.options)
                if cut >= size:
                    break
                if not cuts or cut > cuts[-1]:
                    cuts.append(cut)
        offsets = _count_records(spec.path, cuts) if fmt in INDEXED_FORMATS else [0] * len(cuts)
        bounds = [0, *cuts, size]
        for k in range(len(bounds) - 1):
            out.append(Shard(index=len(out), input_index=i, path=str(spec.path), format=fmt,
                             start=bounds[k], end=bounds[k + 1], index_offset=([0, *offsets])[k]))
    return out

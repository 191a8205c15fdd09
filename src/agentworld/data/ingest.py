"""Read trajectories from the formats they come in, one at a time, into the unified schema.

Each converter streams :class:`~agentworld.schema.Trajectory` records (one record in memory at a
time; a JSON *array* file is the exception: it is parsed whole, so prefer JSONL for big inputs).
Bad records raise a located :class:`~agentworld.errors.DataError`, or with ``on_error="skip"``
are logged and listed in an :class:`IngestReport` while every other record still comes through.
``Trajectory.meta["source"]`` is the input file unless the record already names one.

Adding a converter: register a class with a ``read`` and, for ``detect_format``, a ``sniff`` that
recognises the first record::

    @register_converter("my-log")                     # also sets MyLog.name
    class MyLog:
        @staticmethod
        def sniff(record: object) -> bool:
            return isinstance(record, dict) and "steps" in record

        def read(self, path, *, on_error="raise", report=None):
            for line, index, rec in records(path, on_error, report):
                try:
                    turns = tuple(Turn(action=s["cmd"], observation=s["out"]) for s in rec["steps"])
                except (KeyError, TypeError) as exc:
                    skip_or_raise(DataError(f"bad step {exc}", path=str(path), line=line), on_error, report)
                    continue
                yield Trajectory(id=str(rec.get("id", index)), domain="terminal", turns=turns,
                                 system_prompt=rec.get("system", ""), meta={"source": str(path)})
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Literal, Protocol

import orjson
from pydantic import BaseModel, Field, ValidationError

from agentworld import schema
from agentworld.data.bench_rows import BenchRow, OpenSessions, is_incremental, join_rows, session_trajectory
from agentworld.data.records import PlainTrajectory
from agentworld.domains import DEFAULT_DOMAIN, domain_names
from agentworld.errors import DataError
from agentworld.inputs import lines, max_input_bytes, open_file, parse_json, read_bytes
from agentworld.schema import Trajectory, Turn

log = logging.getLogger(__name__)
OnError = Literal["raise", "skip"]
MAX_LISTED_ISSUES = 1000


class IngestIssue(BaseModel):
    """One skipped record: where it was and why."""

    file: str
    line: int | None = None
    reason: str
    sample_id: str | None = None
    field: str | None = None


class IngestReport(BaseModel):
    """What ingest read and skipped (the first :data:`MAX_LISTED_ISSUES` issues are listed)."""

    files: list[str] = Field(default_factory=list)
    trajectories: int = 0
    skipped: int = 0
    issues: list[IngestIssue] = Field(default_factory=list)

    def add(self, err: DataError) -> None:
        self.skipped += 1
        if len(self.issues) < MAX_LISTED_ISSUES:
            self.issues.append(IngestIssue(file=err.path or "", line=err.line, reason=err.message,
                                           sample_id=err.sample_id, field=err.field))


LocatedRecord = tuple[int | None, int | None, int, Any]
"""``(line, byte offset, index, record)``; line and offset are None for JSON-array items."""
RecordSource = Callable[[Path, OnError, "IngestReport | None"], Iterator[LocatedRecord]]
"""Where a converter's records come from: ``(path, on_error, report) -> (line, offset, index, record)``.

:func:`located_records` reads the whole file; the scale-out passes one that reads a shard's byte
range (``source=`` of :func:`ingest_plain`, handed to the built-in converters' ``read``)."""


class Converter(Protocol):
    """Reads one input file into trajectories, streaming."""

    name: str

    def read(self, path: Path, *, on_error: OnError = "raise",
             report: IngestReport | None = None) -> Iterator[Trajectory]: ...


_REGISTRY: dict[str, Callable[..., Converter]] = {}


def register_converter(name: str) -> Callable[[type], type]:
    """Class decorator: make a converter available as ``name`` (later registrations are sniffed first)."""
    def deco(cls: type) -> type:
        cls.name = name  # type: ignore[attr-defined]
        _REGISTRY[name] = cls
        return cls
    return deco


def get_converter(name: str, **options: Any) -> Converter:
    """A converter instance; ``options`` go to its constructor (e.g. ``domain`` for ``openai-chat``)."""
    if name not in _REGISTRY:
        raise DataError(f"unknown format {name!r}; known: auto, {', '.join(_REGISTRY)}", field="format")
    return _REGISTRY[name](**options)


def formats() -> list[str]:
    return list(_REGISTRY)


def skip_or_raise(err: DataError, on_error: OnError, report: IngestReport | None) -> None:
    """Raise ``err``, or (``skip``) log it and count it in ``report``."""
    if on_error == "raise":
        raise err
    log.warning("skipped: %s", err)
    if report is not None:
        report.add(err)


def array_document(path: Path) -> bool:
    """A JSON array file (as opposed to JSONL, where a line may itself be a list of messages)."""
    with open_file(path, what="data file") as handle:
        head = handle.readline(max_input_bytes() + 1).removeprefix(b"\xef\xbb\xbf")
        if not head.lstrip().startswith(b"["):
            return False
        try:
            first = orjson.loads(head)
        except orjson.JSONDecodeError:
            return True
        rest = handle.read(64).strip()
    is_message_list = isinstance(first, list) and bool(first) and isinstance(first[0], dict) \
        and "role" in first[0]
    return not (is_message_list or rest)


def records(path: Path, on_error: OnError = "raise", report: IngestReport | None = None,
            source: RecordSource | None = None) -> Iterator[tuple[int | None, int, Any]]:
    """Yield ``(line, index, record)`` for JSONL lines or JSON-array items (line is None for arrays).

    ``source`` reads the records (default :func:`located_records`, the whole file).
    """
    for line, _, index, obj in (source or located_records)(path, on_error, report):
        yield line, index, obj


def located_records(path: Path, on_error: OnError = "raise", report: IngestReport | None = None
                    ) -> Iterator[tuple[int | None, int | None, int, Any]]:
    """:func:`records` with each line's byte offset: ``(line, offset, index, record)`` (None for arrays)."""
    if array_document(path):
        items = parse_json(read_bytes(path, what="data file").removeprefix(b"\xef\xbb\xbf"), path=path)
        yield from ((None, None, i, item) for i, item in enumerate(items))
        return
    index = 0
    for lineno, start, raw in lines(path, what="data file"):
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            err = DataError(f"malformed JSON: {exc}", path=str(path), line=lineno)
            skip_or_raise(err, on_error, report)
            continue
        yield lineno, start, index, obj
        index += 1


def detect_format(path: Path) -> str:
    """The format of ``path``, told by its first record (each converter's ``sniff``)."""
    first = next((rec for _, _, rec in records(Path(path))), None)
    for name in reversed(_REGISTRY):
        sniff = getattr(_REGISTRY[name], "sniff", None)
        if sniff is not None and sniff(first):
            return name
    raise DataError(f"cannot tell the format; pass one of: {', '.join(_REGISTRY)}", path=str(path))


def ingest(path: str | Path, fmt: str = "auto", *, on_error: OnError = "raise",
           report: IngestReport | None = None, **options: Any) -> Iterator[Trajectory]:
    """Stream the trajectories of one file (format detected when ``fmt`` is ``auto``)."""
    for traj in ingest_plain(path, fmt, on_error=on_error, report=report, **options):
        yield traj if isinstance(traj, Trajectory) else traj.to_model()


def ingest_plain(path: str | Path, fmt: str = "auto", *, on_error: OnError = "raise",
                 report: IngestReport | None = None, source: RecordSource | None = None,
                 **options: Any) -> Iterator[Trajectory | PlainTrajectory]:
    """:func:`ingest` for the pipeline: converters with a ``read_plain`` give plain records
    (:mod:`agentworld.data.records`), the others their pydantic ones.

    ``source``: where the records come from (see :data:`RecordSource`); only the built-in
    converters take one, so it is passed on only when given.
    """
    path = Path(path)
    open_file(path, what="data file").close()  # missing, a FIFO, a device, a folder: said before any read
    converter = get_converter(detect_format(path) if fmt == "auto" else fmt, **options)
    if report is not None:
        report.files.append(str(path))
    read = getattr(converter, "read_plain", converter.read)
    sourced = {"source": source} if source is not None else {}
    for traj in read(path, on_error=on_error, report=report, **sourced):
        if report is not None:
            report.trajectories += 1
        yield traj


def _invalid(exc: ValidationError, path: Path, line: int | None, sid: str | None) -> DataError:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"]) or None
    return DataError(err["msg"], path=str(path), line=line, sample_id=sid, field=field)


def _sourced(traj: Trajectory, path: Path, extra: dict[str, Any] | None = None) -> Trajectory:
    meta = {**traj.meta, **(extra or {})}
    meta.setdefault("source", str(path))
    return traj.model_copy(update={"meta": meta})


def _lifted(meta: dict[str, Any], path: Path) -> dict[str, Any]:
    """A recording's ``meta`` as trajectory meta: ``source`` is the file, the recorder's is ``origin``."""
    extra = {**meta, "source": str(path)}
    if "source" in meta:
        extra["origin"] = meta["source"]
    return extra


# -- built-in converters ---------------------------------------------------------------------------

@register_converter("agentworld-bench")
class BenchConverter:
    """AgentWorldBench rows joined back into trajectories (consecutive rows of one trajectory).

    Rows belong together while task, system prompt and prompt/response lists stay the same and no
    ``turn_idx`` repeats; each row's own fields live on in ``turn.meta["row"]``
    (:func:`schema.join_samples`), so splitting gives back the same rows, byte for byte.
    """

    lift_meta = False
    incremental = False
    """Whether rows written as a session went (:func:`bench_rows.is_incremental`) are joined by session."""

    def __init__(self, known_domains: Sequence[str] | None = None) -> None:
        """``known_domains``: the domains a row's ``task`` may name (default: every registered one)."""
        self.known_domains = list(domain_names() if known_domains is None else known_domains)
        self._known = frozenset(self.known_domains)

    @staticmethod
    def sniff(record: Any) -> bool:
        return isinstance(record, dict) and {"prompt", "response", "system_str"} <= record.keys()

    def read(self, path: Path, *, on_error: OnError = "raise", report: IngestReport | None = None,
             source: RecordSource | None = None) -> Iterator[Trajectory]:
        for traj in self.read_plain(path, on_error=on_error, report=report, source=source):
            yield traj if isinstance(traj, Trajectory) else traj.to_model()

    def read_plain(self, path: Path, *, on_error: OnError = "raise", report: IngestReport | None = None,
                   source: RecordSource | None = None) -> Iterator[Trajectory | PlainTrajectory]:
        """:meth:`read`, joined rows as plain records (sessions of incremental rows stay pydantic)."""
        group: list[BenchRow] = []
        turns: set[int] = set()
        sessions = OpenSessions() if self.incremental else None
        for line, offset, _, raw in (source or located_records)(path, on_error, report):
            row = self._row(raw, path, line)
            if isinstance(row, DataError):
                skip_or_raise(row, on_error, report)
                continue
            if sessions is not None and is_incremental(row):
                sessions.add(row, offset)
                continue
            if group and (row.key != group[-1].key or row.turn_idx in turns):
                yield self._joined(group, path)
                group, turns = [], set()
            group.append(row)
            turns.add(row.turn_idx)
        if group:
            yield self._joined(group, path)
        if sessions is not None:
            with open_file(path, what="data file") as handle:
                for last in sessions.latest_rows(lambda offset: self._reread(handle, offset, path)):
                    meta = {k: v for k, v in _lifted(last.meta, path).items() if k != "incremental"}
                    yield session_trajectory(last, meta)

    def _row(self, raw: Any, path: Path, line: int | None) -> BenchRow | DataError:
        row = BenchRow.checked(raw, self._known)
        if row is not None:
            return row
        try:  # not plainly valid: the full validation decides (and names the error)
            sample = schema.parse_row(raw, path=str(path), line=line, known_domains=self.known_domains)
            return BenchRow.of(sample)
        except DataError as err:
            return err

    def _reread(self, handle: BinaryIO, offset: int, path: Path) -> BenchRow:
        handle.seek(offset)
        row = self._row(orjson.loads(handle.readline()), path, None)
        if isinstance(row, DataError):  # it was valid when first read: the file changed since
            raise row
        return row

    def _joined(self, group: list[BenchRow], path: Path) -> PlainTrajectory:
        meta = group[0].meta if self.lift_meta else None
        if not isinstance(meta, dict):
            return join_rows(group, {"source": str(path)})
        return join_rows(group, _lifted(meta, path))


@register_converter("recording")
class RecordingConverter(BenchConverter):
    """The recorders' rows: bench rows whose ``meta`` (the recording's) becomes ``Trajectory.meta``.

    The recorder's own ``meta["source"]`` (e.g. ``real``) is kept as ``meta["origin"]``. Rows that
    ``record mcp`` appends as calls are answered (``meta["incremental"]``: row *k* holds turns 1…k)
    are joined by trajectory id wherever they are in the file, and each session, read from its
    latest row, comes after the other trajectories, once the file has been read.
    """

    lift_meta = True
    incremental = True

    @staticmethod
    def sniff(record: Any) -> bool:
        return BenchConverter.sniff(record) and isinstance(record.get("meta"), dict)


class _RowConverter:
    """Rows validated by a pydantic model, one trajectory per row."""

    def read(self, path: Path, *, on_error: OnError = "raise", report: IngestReport | None = None,
             source: RecordSource | None = None) -> Iterator[Trajectory]:
        for line, index, row in records(path, on_error, report, source):
            try:
                traj = self.build(row, path, index)
            except ValidationError as exc:
                sid = row.get("id") if isinstance(row, dict) else None
                skip_or_raise(_invalid(exc, path, line, None if sid is None else str(sid)), on_error, report)
                continue
            yield _sourced(traj, path)

    def build(self, row: Any, path: Path, index: int) -> Trajectory:
        raise NotImplementedError


@register_converter("unified")
class UnifiedConverter(_RowConverter):
    """``Trajectory.model_dump`` rows, as ``agentworld data convert`` writes them."""

    @staticmethod
    def sniff(record: Any) -> bool:
        return isinstance(record, dict) and {"turns", "system_prompt", "domain"} <= record.keys()

    def build(self, row: Any, path: Path, index: int) -> Trajectory:
        return Trajectory.model_validate(row)


class _GenericRow(BaseModel):
    id: str | int | None = None
    domain: str | None = None
    task: str | None = None
    system: str
    turns: list[Turn]
    meta: dict[str, Any] = Field(default_factory=dict)


@register_converter("generic")
class GenericConverter(_RowConverter):
    """``{"id"?, "domain"?, "task"?, "system", "turns": [{"action", "observation", "meta"?}], "meta"?}``."""

    def __init__(self, domain: str = DEFAULT_DOMAIN) -> None:
        self.domain = domain

    @staticmethod
    def sniff(record: Any) -> bool:
        return isinstance(record, dict) and {"turns", "system"} <= record.keys()

    def build(self, row: Any, path: Path, index: int) -> Trajectory:
        rec = _GenericRow.model_validate(row)
        tid = str(rec.id) if rec.id is not None else f"{path.stem}-{index + 1}"
        return Trajectory(id=tid, domain=rec.domain or self.domain, task=rec.task, system_prompt=rec.system,
                          turns=tuple(rec.turns), meta=rec.meta)


from agentworld.data import ingest_chat as ingest_chat  # noqa: E402  (registers "openai-chat", last)

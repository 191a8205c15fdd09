"""Eval run folders: which folders are runs, and the one typed reader of their journals.

Journals: :class:`RunFolder` reads ``predictions.jsonl``, ``judgments.jsonl`` and ``rules.jsonl``
into the records of :mod:`agentworld.eval.records` (the runner, ``score``, ``report`` and the
reference mode all read through it). The last row of an id wins, a torn last line is skipped, and
a row that is not a record is a :class:`~agentworld.errors.DataError` naming its file, line and field.

Which folders are runs — the only non-empty folders ``eval`` commands write into.

Why: ``--out`` (or ``--run``) pointing at some other folder — the results folder of the official
script, a home directory — must be left alone. Such folders hold files with the names a run uses
(``config.json``, ``scores.json``, ``predictions.jsonl``) that resuming would overwrite or
"repair". A run folder is recognised by its ``config.json``: it carries :data:`RUN_FORMAT`, or (runs
written before the marker existed) holds exactly the ``infer`` and ``judge`` sections with the
fields every run stores. Anything else that is not empty is refused before a byte is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from agentworld.errors import AgentWorldError, DataError
from agentworld.eval.records import JudgmentRow, PredictionRow, RuleRow
from agentworld.inputs import lines
from agentworld.io import atomic_write_text, dumps, loads
from agentworld.marks import read_small
from agentworld.outputs import is_empty

Record = TypeVar("Record", bound=BaseModel)

RUN_FORMAT = "agentworld-eval-run/1"
"""Value of ``config.json``'s ``format`` key in every run folder written since the marker was added."""

CONFIG_NAME = "config.json"
CONFIG_LIMIT = 16 << 20
"""The largest ``config.json`` read (a run's settings, its data paths included, fit well within it)."""


class NotARunError(AgentWorldError):
    """A folder given as a run folder holds something else; nothing in it was changed."""


def is_run_config(stored: Any) -> bool:
    """Whether a parsed ``config.json`` was written by ``agentworld eval`` (this or an earlier version)."""
    if not isinstance(stored, dict):
        return False
    if stored.get("format") == RUN_FORMAT:
        return True
    infer = stored.get("infer")
    return (set(stored) == {"infer", "judge"} and isinstance(infer, dict)
            and isinstance(infer.get("data"), list) and isinstance(infer.get("model"), str)
            and (stored["judge"] is None or isinstance(stored["judge"], dict)))


def stored_config(folder: Path) -> Any:
    """The parsed ``config.json`` of ``folder``; None when absent, not JSON, or not a regular file of
    at most :data:`CONFIG_LIMIT` bytes (a link or a FIFO put there is neither followed nor waited on)."""
    raw = read_small(folder / CONFIG_NAME, CONFIG_LIMIT)
    try:
        return loads(raw) if raw is not None else None
    except ValueError:
        return None


def _run_config(folder: Path) -> dict[str, Any] | None:
    """The folder's ``config.json`` when it is a run's, else None (absent, unreadable or foreign)."""
    stored = stored_config(folder)
    return stored if is_run_config(stored) else None


def is_run_folder(folder: Path) -> bool:
    """Whether ``folder`` is an ``eval run``/``infer``/``probes`` run (its ``config.json`` says so)."""
    return _run_config(folder) is not None


def holds_format(folder: Path, fmt: str) -> bool:
    """Whether ``folder``'s ``config.json`` carries ``format`` ``fmt`` (the mark of a typed run)."""
    stored = stored_config(folder)
    return isinstance(stored, dict) and stored.get("format") == fmt


def open_out_folder(out: Path) -> dict[str, Any] | None:
    """The stored config of the run folder ``out``, or None when ``out`` is new (absent or empty).

    Raises:
        NotARunError: ``out`` is a file, unreadable, or a non-empty folder that is not a run.
    """
    if not out.exists():
        return None
    if not out.is_dir():
        raise NotARunError(f"{out}: exists and is not a folder; give a new or empty folder as --out")
    try:
        empty = is_empty(out)
    except OSError as exc:
        raise NotARunError(f"{out}: cannot read the folder ({exc.strerror})") from None
    if empty:
        return None
    stored = _run_config(out)
    if stored is None:
        raise NotARunError(f"{out}: not empty and not an agentworld eval run (no {CONFIG_NAME} written by "
                           "'agentworld eval'); nothing was changed. Give a new or empty folder as --out")
    return stored


def require_run(run_dir: Path) -> dict[str, Any]:
    """The stored config of an existing run folder (for ``eval judge/score/report --run``).

    Raises:
        NotARunError: ``run_dir`` is missing or is not a run folder.
    """
    if not run_dir.is_dir():
        raise NotARunError(f"{run_dir}: no such folder (give a folder written by 'agentworld eval run')")
    stored = _run_config(run_dir)
    if stored is None:
        raise NotARunError(f"{run_dir}: not an agentworld eval run (no {CONFIG_NAME} written by "
                           "'agentworld eval run' or 'eval infer'); nothing was changed")
    return stored


def write_stored(run_dir: Path, sections: dict[str, Any]) -> None:
    """Write the run's ``config.json`` (atomically), marked as a run folder."""
    atomic_write_text(run_dir / CONFIG_NAME, dumps({"format": RUN_FORMAT, **sections}) + "\n")


def read_records(path: Path, record: type[Record]) -> dict[str, Record]:
    """The rows of a journal as ``record`` by id; the last row of an id wins (a resumed run redid it).

    Raises:
        DataError: a whole line is not a valid ``record`` (file, line, sample id and field named).
    """
    rows: dict[str, Record] = {}
    if not path.exists() and not path.is_symlink():
        return rows
    for number, _, raw in lines(path, what="journal"):
        try:
            row = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue  # a torn last line: the journal's next opening sets it aside
        try:
            parsed = record.model_validate(row)
        except ValidationError as exc:
            first = exc.errors()[0]
            sample = str(row.get("id")) if isinstance(row, dict) and "id" in row else None
            raise DataError(f"not a {record.__name__}: {first['msg']}", path=str(path), line=number,
                            sample_id=sample, field=".".join(map(str, first["loc"])) or None) from None
        rows[str(getattr(parsed, "id"))] = parsed  # noqa: B009 (every record has an id)
    return rows


@dataclass(frozen=True)
class RunFolder:
    """The journals of one run folder, read as typed records."""

    path: Path

    def predictions(self) -> dict[str, PredictionRow]:
        return read_records(self.path / "predictions.jsonl", PredictionRow)

    def judgments(self) -> dict[str, JudgmentRow]:
        return read_records(self.path / "judgments.jsonl", JudgmentRow)

    def rules(self) -> dict[str, RuleRow]:
        return read_records(self.path / "rules.jsonl", RuleRow)


def open_typed_run(out: Path, identity: dict[str, Any], *, kind: str) -> None:
    """Create the run folder of a command whose ``config.json`` holds ``identity`` (with its own
    ``format``), or check that the one there was written with the same configuration.

    Why one function: ``eval agent-predictions`` and ``eval closed-loop`` keep their run folders the
    same way — a foreign folder is never touched and a changed configuration is refused by name.

    Raises:
        AgentWorldError: ``out`` is a file or a foreign non-empty folder (left untouched), or its run
            was written with other settings (:class:`~agentworld.errors.ConfigMismatchError`).
    """
    from agentworld.errors import ConfigMismatchError
    from agentworld.eval.config import diff_sections

    config_file = out / "config.json"
    if out.exists() and not out.is_dir():
        raise AgentWorldError(f"{out}: exists and is not a folder; give a new or empty folder as --out")
    if out.is_dir() and not is_empty(out):
        stored = stored_config(out)
        if not isinstance(stored, dict) or stored.get("format") != identity.get("format"):
            raise AgentWorldError(f"{out}: a non-empty folder that is not {kind} run; nothing was changed "
                                  "(give a new or empty folder as --out)")
        changes = "; ".join(diff_sections(stored, identity))
        if changes:
            raise ConfigMismatchError(f"{config_file} was written with a different configuration "
                                      f"({changes}); use another --out folder, or restore the original "
                                      "settings")
        return
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(config_file, dumps(identity) + "\n")

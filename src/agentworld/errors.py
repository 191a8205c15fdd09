"""Errors meant for people: each says what was wrong, where, and what to do."""

from __future__ import annotations

from dataclasses import dataclass


class AgentWorldError(Exception):
    """Base class for every error agentworld raises on purpose."""


@dataclass
class DataError(AgentWorldError):
    """Bad input data, located by file, line, sample id and field.

    Raised before anything is written for the offending row, so earlier output stays intact.
    """

    message: str
    path: str | None = None
    line: int | None = None
    sample_id: str | None = None
    field: str | None = None

    def __post_init__(self) -> None:
        super().__init__(str(self))

    def __str__(self) -> str:
        where = []
        if self.path is not None:
            where.append(f"{self.path}:{self.line}" if self.line is not None else self.path)
        if self.sample_id is not None:
            where.append(f"sample {self.sample_id!r}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        prefix = ", ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


class ConfigMismatchError(AgentWorldError):
    """A run folder was started with a different configuration than the one given now."""


class BackendError(AgentWorldError):
    """A model backend failed; ``retryable`` tells the caller whether trying again may help."""

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status


class DiskFullError(AgentWorldError):
    """The disk (or quota) filled while writing an output: the run's error, never one sample's.

    Not an :class:`OSError`, so code that records a failed request on its sample does not record
    this one: every journal is left with whole lines and the same command resumes the run.
    """

    def __init__(self, path: str | object) -> None:
        self.path = str(path)
        super().__init__(f"disk full writing {self.path}: free space and run the same command to resume")


def one_line(text: str, limit: int = 500) -> str:
    """``text`` on one line and at most ``limit`` characters, for an error a person reads: what a library
    or a server says (a loader's report, an HTTP parser's message, an error body) may span many lines,
    and the CLI shows an error as one red line."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"

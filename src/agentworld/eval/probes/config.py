"""Typed options of ``agentworld eval probes`` (pydantic only, so ``--help`` stays fast)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentworld.cli_support import cli_flags
from agentworld.endpoints import ModelEndpoint, max_response_field

_RUNTIME: dict[str, Any] = {"runtime": True}


class ProbesConfig(ModelEndpoint):
    """``agentworld eval probes``: verify a world model by rules (controllability, error handling,
    long-context consistency), per domain."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str | None = Field(None, description="World model: the served model name with --model-base-url; "  # type: ignore[assignment]
                              "without it a backend name (retrieval: the offline baseline). Not needed "
                              "with --data-out alone.")
    out: Path | None = Field(None, description="Run folder: created when new or empty; one written by an "
                             "earlier 'eval probes' is resumed (completed probes are not sent again).",
                             json_schema_extra={**_RUNTIME, "output": "folder"})
    domains: list[str] = Field(default_factory=list, description="Only these domains (repeat or d1,d2); "
                               "default: every domain that has probes.")
    seed: int = Field(0, ge=0, le=2**31, description="Seed the probes are generated from (values, names).")
    variants: int = Field(3, ge=1, le=50, description="Probes per template and domain (each with its own "
                          "drawn values).")
    write_data: Path | None = Field(None, description="Also write the probes as an AgentWorldBench JSONL "
                                    "file (the mock server can serve it); alone, only that is done.",
                                    json_schema_extra={**_RUNTIME, "output": "file",
                                                       **cli_flags("--data-out", old=("--write-data",))})
    max_tokens: int = Field(4096, ge=1, description="max_tokens of world-model requests.")
    temperature: float = Field(0.0, ge=0, description="Temperature of world-model requests.")
    concurrency: int = Field(16, ge=1, description="World-model requests in flight at once.",
                             json_schema_extra=_RUNTIME)
    progress: bool = Field(True, description="Show a progress bar with ETA (off when not a terminal).",
                           json_schema_extra=_RUNTIME)
    cache: Path | None = Field(None, description="Extra response cache shared between runs (JSONL).",
                               json_schema_extra=_RUNTIME)
    max_retries: int = Field(5, ge=0, description="HTTP retries per request (429, 5xx, timeouts).",
                             json_schema_extra=_RUNTIME)
    timeout_s: float = Field(600.0, gt=0, description="HTTP timeout per request, seconds.",
                             json_schema_extra=_RUNTIME)
    max_response_bytes: int | None = max_response_field()
    backoff_s: float = Field(0.5, ge=0, description="First retry delay, seconds (doubled per retry).",
                             json_schema_extra=_RUNTIME)

    @field_validator("domains")
    @classmethod
    def _split_commas(cls, value: list[str]) -> list[str]:
        return [part.strip() for item in value for part in item.split(",") if part.strip()]

    def owns_output(self, field: str, path: Path) -> bool:
        """Whether ``path`` is a run folder an earlier version of this command wrote (see
        :mod:`agentworld.outputs`; later ones carry its lock file)."""
        from agentworld.eval.probes.command import RUN_FORMAT
        from agentworld.eval.runfolder import holds_format

        return holds_format(path, RUN_FORMAT)


class ProbeResult(BaseModel):
    """The verdict on one probe, as ``report.json`` lists it."""

    model_config = ConfigDict(frozen=True)

    id: str
    domain: str
    category: str
    name: str
    gap: int | None = None
    passed: bool
    failed_checks: list[str] = Field(default_factory=list)
    error: str | None = None

"""Typed configuration of ``agentworld eval``: one pydantic class per entry point, the CLI built from it.

Each field is documented once, here; :mod:`agentworld.cli_support` turns the classes into typer
commands. A field's ``json_schema_extra`` says which part of the run it belongs to: ``runtime``
fields (concurrency, progress, keys, …) may change between resumptions, ``judge`` fields may
change when re-judging, everything else identifies the predictions and must not change.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from agentworld.errors import ConfigMismatchError
from agentworld.io import atomic_write_text, dumps, loads

JudgeMode = Literal["rubric", "turing", "reference"]
_RUNTIME: dict[str, Any] = {"runtime": True}
_JUDGE: dict[str, Any] = {"judge": True}


class RuntimeFields(BaseModel):
    """Settings that change how fast or where a run happens, never what it produces."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    concurrency: int = Field(16, ge=1, description="Samples processed at once (the backends also limit).",
                             json_schema_extra=_RUNTIME)
    progress: bool = Field(True, description="Show a progress bar with ETA (off when not a terminal).",
                           json_schema_extra=_RUNTIME)
    cache: Path | None = Field(None, description="Extra response cache shared between runs (JSONL).",
                               json_schema_extra=_RUNTIME)
    max_retries: int = Field(5, ge=0, description="HTTP retries per request (429, 5xx, timeouts).",
                             json_schema_extra=_RUNTIME)
    timeout_s: float = Field(600.0, gt=0, description="HTTP timeout per request, seconds.",
                             json_schema_extra=_RUNTIME)
    backoff_s: float = Field(0.5, ge=0, description="First retry delay, seconds (doubled per retry).",
                             json_schema_extra=_RUNTIME)
    rules: bool = Field(True, description="Run the deterministic rule tier when it is installed.",
                        json_schema_extra=_RUNTIME)


class JudgeFields(BaseModel):
    """Which judge scores the predictions, and how; may differ between judgings of one run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    judge_base_url: str | None = Field(None, description="OpenAI-compatible base URL of the judge.",
                                       json_schema_extra=_JUDGE)
    judge_model: str | None = Field(None, description="Judge model name (or a backend name without URL).",
                                    json_schema_extra=_JUDGE)
    judge_api_key: SecretStr | None = Field(
        None, description="Judge API key (never written to disk).",
        json_schema_extra={**_RUNTIME, "envvar": "AGENTWORLD_JUDGE_API_KEY"})
    judge_mode: JudgeMode = Field("rubric", description="rubric scores, turing (which is real?) or "
                                  "reference (which of two predictions is closer to the truth?).",
                                  json_schema_extra=_JUDGE)
    reference_run: Path | None = Field(None, description="Run folder whose predictions are the reference "
                                       "(judge mode 'reference').", json_schema_extra=_JUDGE)
    prompts: Path | None = Field(None, description="Folder of <domain>/judge_system_prompt.txt overrides.",
                                 json_schema_extra=_JUDGE)
    judge_retries: int = Field(3, ge=1, description="Judge attempts per sample when a reply does not parse.",
                               json_schema_extra=_JUDGE)
    judge_max_tokens: int = Field(32768, ge=1, description="max_tokens of judge requests.",
                                  json_schema_extra=_JUDGE)
    judge_temperature: float = Field(0.6, ge=0, description="Temperature of judge requests.",
                                     json_schema_extra=_JUDGE)
    seed: int = Field(0, description="Seed of the A/B position draw (turing, reference).",
                      json_schema_extra=_JUDGE)


class InferFields(BaseModel):
    """What is predicted: data, world model and sampling; fixed for the life of a run folder."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    data: list[Path] = Field(description="AgentWorldBench JSONL files or folders of *_test.jsonl "
                             "(several after one --data, or --data repeated).")
    out: Path = Field(description="Run folder (created; an existing one is resumed).",
                      json_schema_extra=_RUNTIME)
    model: str = Field(description="World-model name; without --model-base-url, a backend name "
                       "(e.g. retrieval, scripted).")
    model_base_url: str | None = Field(None, description="OpenAI-compatible base URL of the world model.")
    model_api_key: SecretStr | None = Field(None, description="World-model API key (never written to disk).",
                                            json_schema_extra={**_RUNTIME, "envvar": "OPENAI_API_KEY"})
    max_tokens: int = Field(32768, ge=1, description="max_tokens of world-model requests.")
    temperature: float = Field(0.6, ge=0, description="Temperature of world-model requests.")
    limit: int | None = Field(None, ge=1, description="Evaluate only the first N samples (after --domains).")
    domains: list[str] = Field(default_factory=list, description="Only these domains (repeat or d1,d2).")

    @field_validator("domains")
    @classmethod
    def _split_commas(cls, value: list[str]) -> list[str]:
        """``--domains a,b`` and ``--domains a --domains b`` mean the same."""
        return [part.strip() for item in value for part in item.split(",") if part.strip()]


class InferConfig(RuntimeFields, InferFields):
    """``agentworld eval infer``: predictions only."""


class EvalConfig(RuntimeFields, JudgeFields, InferFields):
    """``agentworld eval run``: infer, judge, rule tier and score in one resumable run."""

    no_judge: bool = Field(False, description="Skip judging (predictions and rules only).",
                           json_schema_extra=_RUNTIME)


class JudgeConfig(RuntimeFields, JudgeFields):
    """``agentworld eval judge``: (re-)judge the stored predictions of a run; never re-predicts."""

    run: Path = Field(description="Run folder written by 'eval run' or 'eval infer'.",
                      json_schema_extra=_RUNTIME)


def _kind(config_cls: type[BaseModel], name: str) -> str:
    extra = config_cls.model_fields[name].json_schema_extra
    if isinstance(extra, dict) and extra.get("runtime"):
        return "runtime"
    return "judge" if isinstance(extra, dict) and extra.get("judge") else "infer"


def fingerprint_file(paths: list[Path]) -> str:
    """sha256 over the bytes of the given files, so a changed data or prompt file is noticed."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path.name).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def resolved_sections(config: BaseModel, extras: dict[str, Any]) -> dict[str, Any]:
    """The config as stored in ``config.json``: ``infer`` and ``judge`` sections, runtime fields left out."""
    sections: dict[str, dict[str, Any]] = {"infer": {}, "judge": {}}
    dumped = config.model_dump(mode="json")
    for name in type(config).model_fields:
        kind = _kind(type(config), name)
        if kind != "runtime":
            sections[kind][name] = dumped[name]
    for key, value in extras.items():
        section, _, name = key.partition(".")
        sections[section][name] = value
    return sections


def diff_sections(stored: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Human-readable ``field: stored -> current`` lines for every differing field."""
    lines = []
    for name in sorted(set(stored) | set(current)):
        if stored.get(name) != current.get(name):
            lines.append(f"  {name}: {stored.get(name)!r} -> {current.get(name)!r}")
    return lines


def check_section(run_dir: Path, stored: dict[str, Any] | None, current: dict[str, Any], what: str) -> None:
    """Raise :class:`ConfigMismatchError` naming each field that differs from the stored run."""
    if stored is None:
        return
    lines = diff_sections(stored, current)
    if lines:
        raise ConfigMismatchError(
            f"{run_dir}/config.json was written with a different {what} configuration:\n"
            + "\n".join(lines) + "\nUse another --out folder, or restore the original settings.")


def read_stored(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / "config.json"
    return loads(path.read_bytes()) if path.exists() else None


def write_stored(run_dir: Path, sections: dict[str, Any]) -> None:
    atomic_write_text(run_dir / "config.json", dumps(sections) + "\n")


def public_url(url: str | None) -> str | None:
    """A URL without user info or query (where keys hide), for logs and reports."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

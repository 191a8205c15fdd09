"""Typed configuration of ``agentworld eval``: one pydantic class per entry point, the CLI built from it.

Each field is documented once, here; :mod:`agentworld.cli_support` turns the classes into typer
commands. The world-model and judge endpoint fields come from :mod:`agentworld.endpoints`, so they
are named, documented and read from the environment as in every other command. A field's
``json_schema_extra`` says which part of the run it belongs to: ``runtime`` fields (concurrency,
progress, keys, …) may change between resumptions, ``judge`` fields may change when re-judging,
everything else identifies the predictions and must not change.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from agentworld.domains.prompt_view import PromptView
from agentworld.endpoints import JudgeEndpoint, ModelEndpoint, max_response_field
from agentworld.errors import ConfigMismatchError, DataError
from agentworld.inputs import check_file
from agentworld.redact import redact_url

JudgeMode = Literal["rubric", "turing", "reference"]
_RUNTIME: dict[str, Any] = {"runtime": True}
_JUDGE: dict[str, Any] = {"judge": True}


class RuntimeFields(BaseModel):
    """Settings that change how fast or where a run happens, never what it produces."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    concurrency: int = Field(16, ge=1, description="Requests in flight per endpoint: up to this many "
                             "predictions, and as many judgings of finished predictions, at once.",
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
    rules: bool = Field(True, description="Run the deterministic rule tier when it is installed.",
                        json_schema_extra=_RUNTIME)


class JudgeFields(JudgeEndpoint):
    """Which judge scores the predictions, and how; may differ between judgings of one run."""

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


class InferFields(ModelEndpoint):
    """What is predicted: data, world model and sampling; fixed for the life of a run folder."""

    data: list[Path] = Field(description="AgentWorldBench JSONL files or folders of *_test.jsonl "
                             "(several after one --data, or --data repeated).")
    out: Path = Field(description="Run folder: created when new or empty; one written by an earlier run "
                      "is resumed; any other non-empty folder is refused.",
                      json_schema_extra={**_RUNTIME, "output": "folder"})
    max_tokens: int = Field(32768, ge=1, description="max_tokens of world-model requests.")
    temperature: float = Field(0.6, ge=0, description="Temperature of world-model requests.")
    limit: int | None = Field(None, ge=1, description="Evaluate only the first N samples (after --domains).")
    domains: list[str] = Field(default_factory=list, description="Only these domains (repeat or d1,d2).")
    prompt: Literal["official", "brief"] = Field(
        "official", description="System prompt shown to the world model: 'official' (each row's own) or "
        "'brief' (the domain's short prompt, as a small model was trained with 'train sft' system: brief).")
    history_turns: int | None = Field(None, ge=0, description="Show only the last N earlier turns (as the "
                                      "model was trained); default: all.")
    history_chars: int | None = Field(None, ge=16, description="Cut each earlier observation shown to N "
                                      "characters (as the model was trained); default: whole.")
    exclude_own: bool | None = Field(
        None, description="Retrieval backend only: leave each evaluated sample's own recording (same domain "
        "and trajectory id) out of the index, so it is predicted, not recalled; --keep-own keeps them "
        "(an upper bound). Default: left out for recordings of the built-in held-out scenarios; other "
        "data keeps them and the run warns how many samples they answer.",
        json_schema_extra={"flags": ["--exclude-own/--keep-own"]})

    def view(self) -> PromptView:
        """The :class:`PromptView` of ``--prompt``/``--history-turns``/``--history-chars``."""
        return PromptView(system=self.prompt, history_turns=self.history_turns,
                          history_chars=self.history_chars)

    def owns_output(self, field: str, path: Path) -> bool:
        """Whether ``path`` is a run folder written without the guard's lock (by an earlier version, or
        by the demo through the library): its ``config.json`` carries the run format, the explicit mark
        of eval's run folders (the keys of a config are no mark: a user's file may have them too)."""
        from agentworld.eval.runfolder import RUN_FORMAT, holds_format

        return holds_format(path, RUN_FORMAT)

    @model_validator(mode="after")
    def _own_needs_retrieval(self) -> InferFields:
        if self.exclude_own is not None and (self.model != "retrieval" or self.model_base_url):
            raise PydanticCustomError("exclude_own", "--exclude-own/--keep-own applies to --model retrieval "
                                      "only (without --model-base-url)")
        return self

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


_OMITTED_WHEN_EMPTY = ("model_corpus", "exclude_own", "history_turns", "history_chars")
"""Fields added after the first run-folder layout: left out of ``config.json`` while unset (``None`` or
empty), so runs written before them resume unchanged."""


def fingerprint_file(paths: list[Path]) -> str:
    """sha256 over the bytes of the given files, so a changed data or prompt file is noticed."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path.name).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def fingerprint_paths(paths: list[Path], field: str) -> str:
    """sha256 over files and every file under folders (by relative name), for inputs such as a corpus.

    Raises:
        DataError: a path that does not exist, named with the option it came from.
    """
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.is_file())
        elif path.is_file():
            files.append(path)
        elif path.exists():  # a FIFO or a device: refused before anything opens it
            check_file(path, max_bytes=0, what=field)
        else:
            raise DataError("no such file or folder", path=str(path), field=field)
    return fingerprint_file(files)


def _stored_value(name: str, value: Any) -> Any:
    """What ``config.json`` keeps of a field: URLs without credentials (so a key never reaches disk,
    and a changed key alone does not count as a changed run)."""
    if name.endswith("base_url") and isinstance(value, str):
        return redact_url(value)
    return value


def resolved_sections(config: BaseModel, extras: dict[str, Any]) -> dict[str, Any]:
    """The config as stored in ``config.json``: ``infer`` and ``judge`` sections, runtime fields left out."""
    sections: dict[str, dict[str, Any]] = {"infer": {}, "judge": {}}
    dumped = config.model_dump(mode="json")
    for name in type(config).model_fields:
        kind = _kind(type(config), name)
        if kind == "runtime" or (name in _OMITTED_WHEN_EMPTY and dumped[name] in (None, [])):
            continue
        if name == "prompt" and dumped[name] == "official":  # added later too: runs before it resume
            continue
        sections[kind][name] = _stored_value(name, dumped[name])
    for key, value in extras.items():
        section, _, name = key.partition(".")
        sections[section][name] = value
    return sections


def redact_stored(section: dict[str, Any] | None) -> dict[str, Any] | None:
    """A stored section with its URLs redacted (runs written before redaction kept them verbatim)."""
    if section is None:
        return None
    return {name: _stored_value(name, value) for name, value in section.items()}


def diff_sections(stored: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Human-readable ``field: stored -> current`` items for every differing field."""
    return [f"{name}: {stored.get(name)!r} -> {current.get(name)!r}"
            for name in sorted(set(stored) | set(current)) if stored.get(name) != current.get(name)]


def is_pool(url: Any) -> bool:
    """Whether a stored ``model_base_url`` lists several endpoints (see ``endpoints.base_urls``)."""
    return isinstance(url, str) and "," in url


def align_pool(stored: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """``stored`` with its ``model_base_url`` taken from ``current`` when either is a pool: a pool's members
    are where the model runs, not what it is, so a run resumes when endpoints join or leave."""
    if is_pool(stored.get("model_base_url")) or is_pool(current.get("model_base_url")):
        return {**stored, "model_base_url": current.get("model_base_url")}
    return stored


def check_section(run_dir: Path, stored: dict[str, Any] | None, current: dict[str, Any], what: str) -> None:
    """Raise :class:`ConfigMismatchError` (one line) naming each field that differs from the stored run."""
    if stored is None:
        return
    changes = "; ".join(diff_sections(stored, current))
    if changes:
        raise ConfigMismatchError(
            f"{run_dir}/config.json was written with a different {what} configuration ({changes}); "
            "use another --out folder, or restore the original settings")

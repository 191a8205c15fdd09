"""The rows of an eval run folder's journals as typed, frozen records (docs/CONTRACTS.md).

Why typed: the runner, ``score`` and ``report`` all read these rows; with dicts each of them
re-derived what a row meant, and a judgment's outcome lived in the prefix of its error text. Here a
judgment carries ``status``; ``failed`` is derived from it. Rows written before ``status`` existed
still read: their status is recovered from the error texts of that time (:func:`legacy_status`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from agentworld.models.base import Usage

JudgmentStatus = Literal["ok", "parse_error", "api_error", "no_generation", "no_reference"]
"""How judging a sample ended: judged (``ok``); the judge's replies never parsed (``parse_error``);
the judge endpoint failed (``api_error``, retried on resume); no prediction text to judge
(``no_generation``, as officially: failed without asking); no reference prediction (``no_reference``)."""

NO_GENERATION = "No model generation"
PARSE_FAILED = "Judge scoring failed"
NO_REFERENCE = "No reference prediction"
LEGACY_BACKEND_PREFIX = "backend: "
"""Error-text prefix that marked an endpoint failure before ``status`` was written."""
STATUS_TEXT: dict[str, str] = {"parse_error": PARSE_FAILED, "no_generation": NO_GENERATION,
                               "no_reference": NO_REFERENCE}
"""The ``error`` text of a status that has a fixed one (the official wording, kept for old readers)."""


def legacy_status(row: Mapping[str, Any]) -> JudgmentStatus:
    """The status of a judgment row written without one, from its ``failed`` flag and error text."""
    if row.get("failed") is False or row.get("failed") == 0:
        return "ok"
    error = str(row.get("error") or "")
    if error.startswith(LEGACY_BACKEND_PREFIX):
        return "api_error"
    for status, text in STATUS_TEXT.items():
        if error == text:
            return status  # type: ignore[return-value]
    return "parse_error"


class PredictionRow(BaseModel):
    """One row of ``predictions.jsonl``: the world model's answer to one sample, or why there is none."""

    model_config = ConfigDict(frozen=True)

    id: str
    domain: str
    prediction: str = ""
    raw: str = ""
    reasoning: str | None = None
    finish_reason: str | None = None
    truncated: bool = False
    """The world model's answer was cut off (``finish_reason == "length"``)."""
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    source: str = ""
    error: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    """Backend details of where the observation came from (e.g. the retrieval neighbour)."""

    @property
    def no_generation(self) -> bool:
        """The model answered, with nothing (not an error)."""
        return not self.error and not self.raw


class JudgmentRow(BaseModel):
    """One row of ``judgments.jsonl``; ``position`` is where the prediction sat (A/B modes)."""

    model_config = ConfigDict(frozen=True)

    id: str
    domain: str
    mode: Literal["rubric", "turing", "reference"] = "rubric"
    status: JudgmentStatus = "parse_error"
    error: str | None = None
    """What went wrong, for people (the endpoint's error; the official wording for the other statuses)."""
    scores: dict[str, int] = Field(default_factory=dict)
    total_score: float = 0.0
    strengths: list[str] = Field(default_factory=list)
    weaknesses: list[str] = Field(default_factory=list)
    judge_raw: str = ""
    choice: str | None = None
    correct: bool | None = None
    position: str | None = None
    attempts: int = 0
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0

    @model_validator(mode="before")
    @classmethod
    def _status_of_old_rows(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "status" not in data and ("failed" in data or "error" in data):
            return {**data, "status": legacy_status(data)}
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def failed(self) -> bool:
        """Counted as failed (official ``failed``): every status but ``ok``."""
        return self.status != "ok"

    @property
    def judge_failure(self) -> bool:
        """Failed for a reason of the judge's (not a missing generation)."""
        return self.status not in ("ok", "no_generation")

    @property
    def rubric_total(self) -> float | None:
        """The rubric total of a successful rubric judgment, else None."""
        return self.total_score if self.status == "ok" and self.mode == "rubric" else None


class RuleRow(BaseModel):
    """One row of ``rules.jsonl``: the rule-tier score of one prediction (``RuleScore`` fields)."""

    model_config = ConfigDict(frozen=True)

    id: str
    domain: str
    rule: dict[str, Any] = Field(default_factory=dict)


def as_prediction(row: PredictionRow | Mapping[str, Any]) -> PredictionRow:
    return row if isinstance(row, PredictionRow) else PredictionRow.model_validate(row)


def as_judgment(row: JudgmentRow | Mapping[str, Any]) -> JudgmentRow:
    return row if isinstance(row, JudgmentRow) else JudgmentRow.model_validate(row)


def as_rule(row: RuleRow | Mapping[str, Any]) -> RuleRow:
    return row if isinstance(row, RuleRow) else RuleRow.model_validate(row)

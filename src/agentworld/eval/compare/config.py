"""Typed options of ``agentworld eval compare`` and its metrics (pydantic only: ``--help`` stays fast)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentworld.cli_support import cli_flags

RUBRIC_METRICS: tuple[str, ...] = ("rubric.total", "rubric.format", "rubric.factuality", "rubric.consistency",
                                   "rubric.realism", "rubric.quality")
RULE_METRICS: tuple[str, ...] = ("rule.overall", "rule.exact", "rule.line_f1", "rule.structure")
METRICS: tuple[str, ...] = (*RUBRIC_METRICS, *RULE_METRICS)
HEADLINE: tuple[str, ...] = ("rubric.total", "rule.overall")
"""Metrics whose per-sample differences are listed (JSON, HTML): one per tier."""
ALL_DOMAINS = "all"
Pair = tuple[str, float, float]
"""A sample id with its values in the baseline and in the compared run."""


class CompareConfig(BaseModel):
    """``agentworld eval compare``: paired differences and bootstrap intervals between run folders."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run: list[Path] = Field(description="Run folder written by 'eval run' (repeat: --run A --run B ...); all "
                            "over the same data.")
    baseline: str | None = Field(None, description="The run the others are compared against (its folder "
                                 "name or path; default: the first --run).")
    bootstrap: int = Field(10_000, ge=100, le=1_000_000, description="Bootstrap resamples per interval.")
    confidence: float = Field(0.95, gt=0, lt=1, description="Confidence level of the intervals.")
    seed: int = Field(0, description="Seed of the bootstrap resampling (same seed, same intervals).")
    metrics: list[str] = Field(default_factory=list, description="Only these metrics (repeat or m1,m2), of: "
                               + ", ".join(METRICS) + ".")
    allow_different_data: bool = Field(
        False, description="Pair samples by id even when the runs' data files differ (the same samples "
        "rewritten with a prompt variant); without it such runs are refused.")
    html: Path | None = Field(None, description="Also write one self-contained HTML page here.",
                              json_schema_extra={**cli_flags("--out", old=("--html",)), "output": "file"})
    as_json: bool = Field(False, description="Print the comparison as JSON.",
                          json_schema_extra=cli_flags("--json"))

    @field_validator("html")
    @classmethod
    def _html_file(cls, value: Path | None) -> Path | None:
        """Only an ``.html`` name: a slip of the option can then never replace a journal or a data file."""
        if value is not None and (value.suffix.lower() not in (".html", ".htm") or value.is_dir()):
            raise ValueError(f"{value}: give a file name ending in .html")
        return value

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, value: list[str]) -> list[str]:
        names = [part.strip() for item in value for part in item.split(",") if part.strip()]
        unknown = [name for name in names if name not in METRICS]
        if unknown:
            raise ValueError(f"unknown metric(s) {', '.join(unknown)}; known: {', '.join(METRICS)}")
        return names

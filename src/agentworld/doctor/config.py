"""Typed settings of ``agentworld doctor`` (pydantic only, so ``--help`` stays fast)."""

from __future__ import annotations

from pydantic import ConfigDict, Field, field_validator, model_validator

from agentworld.endpoints import JudgeEndpoint, ModelEndpoint, max_response_field


class DoctorConfig(JudgeEndpoint, ModelEndpoint):
    """``agentworld doctor``: check a world-model endpoint (and a judge) before a run."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    max_tokens: int = Field(32768, ge=1, description="max_tokens of the sample predictions, as eval run "
                            "would send it; a cut answer is asked again with a larger budget to find the "
                            "--max-tokens it needs.")
    judge_max_tokens: int = Field(32768, ge=1, description="max_tokens of the judge request.")
    temperature: float = Field(0.6, ge=0, description="Temperature of the sample predictions.")
    domains: list[str] = Field(default_factory=list, description="Predict only for these domains (repeat "
                               "or d1,d2); default: every domain that ships a sample.")
    find_max_tokens: bool = Field(True, description="When an answer is cut, ask once more with the budget "
                                  "the context allows, to measure the --max-tokens it needs.")
    timeout_s: float = Field(600.0, gt=0, description="HTTP timeout per request, seconds.")
    max_response_bytes: int | None = max_response_field()
    json_output: bool = Field(False, description="Print the report as JSON instead of a table.",
                              json_schema_extra={"flags": ["--json"]})

    @field_validator("domains")
    @classmethod
    def _split_commas(cls, value: list[str]) -> list[str]:
        return [part.strip() for item in value for part in item.split(",") if part.strip()]

    @model_validator(mode="after")
    def _served(self) -> DoctorConfig:
        if not self.model_base_url:
            raise ValueError("give --model-base-url: the doctor checks served models")
        if (self.judge_base_url is None) != (self.judge_model is None):
            raise ValueError("give both --judge-base-url and --judge-model, or neither")
        return self

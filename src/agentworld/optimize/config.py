"""Typed configuration of ``agentworld optimize prompts``; the CLI options are generated from it.

The world model, data and sampling fields are eval's (:class:`~agentworld.eval.config.InferFields`),
so a prompt is scored exactly as ``eval run`` would score it; the judge is optional (rule tier
only without it); the optimizer endpoint is :class:`~agentworld.endpoints.OptimizerEndpoint`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from agentworld.endpoints import JudgeEndpoint, OptimizerEndpoint
from agentworld.eval.config import InferFields, RuntimeFields

_RUNTIME: dict[str, Any] = {"runtime": True}


class PromptOptConfig(RuntimeFields, JudgeEndpoint, OptimizerEndpoint, InferFields):
    """``agentworld optimize prompts``: propose, evaluate and refine a domain's world-model system prompt."""

    out: Path = Field(description="Output folder (variants, journal, cache, summary.json): created when new "
                      "or empty; one written by an earlier run with the same settings is resumed; any "
                      "other non-empty folder is refused.",
                      json_schema_extra={**_RUNTIME, "output": "folder"})
    rounds: int = Field(3, ge=0, le=100, description="Propose-evaluate-refine rounds per domain (a resumed "
                        "run may raise it to go on refining).", json_schema_extra=_RUNTIME)
    candidates: int = Field(1, ge=1, le=16, description="Revisions the optimizer proposes per round (each "
                            "evaluated; the best on the training split is refined next round).")
    val_fraction: float = Field(0.3, gt=0, lt=1, description="Share of each domain's trajectories held out "
                                "as the validation split, which decides the reported winner.")
    seed: int = Field(0, description="Seed of the train/validation split (by trajectory).")
    worst: int = Field(4, ge=1, le=64, description="Worst-scored training samples shown to the optimizer "
                       "per proposal, each with a unified diff of expected vs predicted.")
    diff_chars: int = Field(8000, ge=500, le=200_000, description="Character budget of the samples part of "
                            "an optimizer request (diffs truncated to fit).")
    max_prompt_chars: int = Field(100_000, ge=100, description="A proposed prompt longer than this many "
                                  "characters is recorded as a failed proposal.")
    rule_weight: float = Field(0.5, ge=0, le=1, description="With a judge: sample score = rule_weight x "
                               "rule tier + (1 - rule_weight) x rubric (both 0-100); without: the rule tier.")
    judge_max_tokens: int = Field(32768, ge=1, description="max_tokens of judge requests.")
    judge_retries: int = Field(3, ge=1, description="Judge attempts per sample when a reply does not parse.")
    judge_temperature: float = Field(0.0, ge=0, description="Temperature of judge requests (0: the least "
                                     "noise between the scores of two prompts).")
    optimizer_max_tokens: int = Field(32768, ge=1, description="max_tokens of optimizer requests.")
    optimizer_temperature: float = Field(0.7, ge=0, description="Temperature of optimizer requests.")

    def owns_output(self, field: str, path: Path) -> bool:
        """Whether ``path`` holds the optimiser's marker (runs written before the lock file existed)."""
        from agentworld.optimize.prompts import KIND, read_marker

        stored = read_marker(path)
        return isinstance(stored, dict) and stored.get("kind") == KIND


CLI_EXCLUDED = ("progress", "rules")
"""Runtime fields of eval that make no sense here: no progress bar; the rule tier is always on."""

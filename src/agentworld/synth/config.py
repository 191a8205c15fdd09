"""Typed settings of ``agentworld synth envs`` (the CLI is generated from them; pydantic only)."""

from __future__ import annotations

from pathlib import Path

from pydantic import ConfigDict, Field, SecretStr

from agentworld.cli_support import cli_flags
from agentworld.endpoints import MODEL_KEY_ENV, Endpoint, ModelEndpoint
from agentworld.synth.report import CheckThresholds

GENERATOR_KEY_ENV = ("AGENTWORLD_GENERATOR_API_KEY", *MODEL_KEY_ENV)


class SynthEnvsConfig(ModelEndpoint, CheckThresholds):
    """``agentworld synth envs``: environments (world folders) from seeds and a generator model, then the
    world checks over all of them (report.json, report.html in OUT)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    seeds: list[Path] = Field(
        min_length=1,
        description="Seed files: trajectories in any format 'agentworld "
        "data' ingests (tau-bench, AgentWorldBench rows, OpenAI tool-call logs) or bare "
        "tools/list JSON (repeat the flag for more). One seed, one environment.",
        json_schema_extra=cli_flags("--seed-files", old=("--seeds",)),
    )
    out: Path = Field(
        description="Output folder: one world folder per environment, the generator cache, "
        "summary.json. Rerunning the same command resumes.",
        json_schema_extra={"output": "folder"},
    )
    generator_model: str = Field(
        description="Generator: the served model name with --generator-base-url; "
        "without it, synth-template (offline: answers from the seed alone)."
    )
    generator_base_url: str | None = Field(
        None, description="OpenAI-compatible base URL of the generator model."
    )
    generator_api_key: SecretStr | None = Field(
        None,
        description="Generator API key (prefer the environment variable: a key on the command line "
        "shows in ps; never written to disk).",
        json_schema_extra={"runtime": True, "envvar": list(GENERATOR_KEY_ENV)},
    )
    per_seed: int = Field(
        1, ge=1, le=10_000, description="Environments per seed: each prompt then names its variant, and the "
        "offline generator draws new entities, tools and multi-step tasks for each (a served generator is "
        "asked for a different world per variant).")
    concurrency: int = Field(8, ge=1, le=4096, description="Most generator requests in flight at once.")
    limit: int | None = Field(None, ge=1, description="Use at most this many seeds (environments).")
    max_tokens: int = Field(4096, ge=16, le=1_000_000, description="Most tokens per generator answer.")
    model: str | None = Field(  # type: ignore[assignment]  # optional: without it, static checks only
        None, description="World model for the simulator checks (reference plans reach their goal, "
        "ledger contradiction probe): the served model name with --model-base-url, else a backend name; "
        "without it the static checks and near-duplicate removal still run.")
    progress: bool = Field(
        True, description="Show a progress bar per stage (on a terminal; plain lines otherwise)."
    )
    controls: bool = Field(
        True, description="Write the standard perturbation specs into each environment (controls/*.yaml: "
        "intermittent, pagination, partial, stale), swept by train rollout --sweep-controls."
    )

    def generator_endpoint(self) -> Endpoint:
        """The generator's :class:`Endpoint`."""
        return Endpoint(self.generator_model, self.generator_base_url, self.generator_api_key)

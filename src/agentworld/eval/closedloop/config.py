"""Typed options of ``agentworld eval closed-loop`` (pydantic only, so ``--help`` stays fast)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from agentworld.cli_support import output
from agentworld.endpoints import AgentEndpoint, JudgeEndpoint, ModelEndpoint, max_response_field

FORMAT = "agentworld-closed-loop/1"
ARM_NAMES = ("bare", "ledger", "router", "ledger+router")
_RUNTIME: dict[str, Any] = {"runtime": True}


class ClosedLoopConfig(AgentEndpoint, ModelEndpoint, JudgeEndpoint):
    """``agentworld eval closed-loop``: one agent in the real environment and in the simulator, compared.

    The agent is an endpoint (``agent_*``) or the scripted agent (``scripted_agent``); exactly one, so
    the fields the endpoint requires are optional here (the ``type: ignore``s), checked together below.
    """

    agent_base_url: str | None = Field(  # type: ignore[assignment]
        None, description="OpenAI-compatible base URL of the agent (or --scripted-agent instead).")
    agent_model: str | None = Field(  # type: ignore[assignment]
        None, description="Agent model name (with --agent-base-url).")
    scripted_agent: bool = Field(False, description="Instead of an agent endpoint: try each task's "
                                 "candidates in order, the next only after an observation showing an error "
                                 "(offline).")
    tasks: Path = Field(description="Tasks JSONL (id, domain, goal, expect, setup, candidates, check, "
                        "errors, max_steps, spec); see docs/guides/evaluate.md, eval closed-loop.")
    domains: list[str] = Field(default_factory=list,
                               description="Only tasks of these domains (repeat or d1,d2).")
    limit: int | None = Field(None, ge=1, description="Only the first N tasks (after --domains).")
    arms: list[str] = Field(default_factory=lambda: list(ARM_NAMES),
                            description="Simulator settings to compare (repeat or a,b): bare, ledger, "
                            "router, ledger+router; default: all four.")
    out: Path = Field(description="Run folder: created when new or empty; one written by an earlier run of "
                      "this command is resumed; any other non-empty folder is refused.",
                      json_schema_extra={**_RUNTIME, "output": "folder"})
    seed: int = Field(0, description="Seed of both episodes (the real environment's and the simulator's).")
    agent_max_tokens: int = Field(4096, ge=1, description="max_tokens of agent requests.")
    agent_temperature: float = Field(0.0, ge=0, description="Temperature of agent requests.")
    concurrency: int = Field(2, ge=1, description="Tasks run at once (each in its own real environments).",
                             json_schema_extra=_RUNTIME)
    max_retries: int = Field(5, ge=0, description="HTTP retries per request (429, 5xx, timeouts).",
                             json_schema_extra=_RUNTIME)
    timeout_s: float = Field(600.0, gt=0, description="HTTP timeout per request, seconds.",
                             json_schema_extra=_RUNTIME)
    max_response_bytes: int | None = max_response_field()

    @field_validator("domains", "arms")
    @classmethod
    def _split_commas(cls, value: list[str]) -> list[str]:
        return [part.strip() for item in value for part in item.split(",") if part.strip()]

    @model_validator(mode="after")
    def _one_agent(self) -> ClosedLoopConfig:
        if (self.agent_base_url is None) == (not self.scripted_agent):
            raise PydanticCustomError("agent", "give exactly one of --agent-base-url (with --agent-model) "
                                      "and --scripted-agent")
        if self.agent_base_url is not None and not self.agent_model:
            raise PydanticCustomError("agent", "--agent-base-url needs --agent-model")
        unknown = [a for a in self.arms if a not in ARM_NAMES]
        if unknown or not self.arms:
            raise PydanticCustomError("arms", "unknown arm {arm}; use bare, ledger, router, ledger+router",
                                      {"arm": repr(unknown[0]) if unknown else "(none given)"})
        if self.judge_base_url and not self.judge_model:
            raise PydanticCustomError("judge", "--judge-base-url needs --judge-model")
        return self

    @property
    def agent_name(self) -> str:
        """What the agent is called in requests and its cached answers."""
        return self.agent_model or "scripted:candidates"

    def owns_output(self, field: str, path: Path) -> bool:
        """Whether ``path`` is a run folder an earlier version of this command wrote (see
        :mod:`agentworld.outputs`; later ones carry its lock file)."""
        from agentworld.eval.runfolder import holds_format

        return holds_format(path, FORMAT)


class TruthConfig(BaseModel):
    """Record the real episodes of closed-loop tasks (the scripted agent, every arm) as the ground-truth
    rows 'agentworld serve mock --data' replays; an existing --out is refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tasks: Path = Field(description="Closed-loop tasks JSONL (as eval closed-loop's --tasks); every task "
                        "lists candidates for the scripted agent.")
    out: Path = Field(description="AgentWorldBench rows to write (a new file).",
                      json_schema_extra=output("file"))
    seed: int = Field(0, description="Seed of the episodes (as eval closed-loop's --seed).")

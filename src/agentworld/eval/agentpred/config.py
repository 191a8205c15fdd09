"""Typed options of ``agentworld eval agent-predictions`` (pydantic only, so ``--help`` stays fast)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from agentworld.endpoints import AgentEndpoint, Endpoint, ModelEndpoint, max_response_field

FORMAT = "agentworld-agent-predictions/1"
_RUNTIME: dict[str, Any] = {"runtime": True}


class AgentPredConfig(AgentEndpoint, ModelEndpoint):
    """``agentworld eval agent-predictions``: the agent's own prediction accuracy on real executions.

    The agent is an endpoint (``agent_*``) or, with ``model`` instead, a scripted agent imagining with
    that world model (``model_*``, named as everywhere a world model is reached); exactly one. So the
    fields each endpoint requires are optional here (the ``type: ignore``s), checked together below.
    """

    agent_base_url: str | None = Field(  # type: ignore[assignment]
        None, description="OpenAI-compatible base URL of the agent (or --model instead: an agent imagining "
        "with that world model).")
    agent_model: str | None = Field(  # type: ignore[assignment]
        None, description="Agent model name (with --agent-base-url).")
    model: str | None = Field(  # type: ignore[assignment]
        None, description="Instead of an agent endpoint: a scripted agent predicts by asking this world "
        "model (a backend name such as retrieval, offline; or the served model name with --model-base-url).")
    keep_heldout: bool = Field(False, description="With --model retrieval: keep the recordings of the run's "
                               "own tasks in the index (left out by default: the shipped corpus holds the "
                               "built-in held-out tasks' sessions, which inflates the score).")

    tasks: Path | None = Field(None, description="Tasks JSONL (id, domain, setup, steps or goal, max_steps); "
                               "default: the built-in held-out tasks of every domain that ships them.")
    domains: list[str] = Field(default_factory=list,
                               description="Only tasks of these domains (repeat or d1,d2).")
    limit: int | None = Field(None, ge=1, description="Only the first N tasks (after --domains).")
    out: Path = Field(description="Run folder: created when new or empty; one written by an earlier run of "
                      "this command is resumed; any other non-empty folder is refused.",
                      json_schema_extra={**_RUNTIME, "output": "folder"})
    agent_max_tokens: int = Field(4096, ge=1, description="max_tokens of agent requests.")
    agent_temperature: float = Field(0.0, ge=0, description="Temperature of agent requests.")
    seed: int = Field(0, description="Seed of the real environments (the terminal's hostname).")
    concurrency: int = Field(4, ge=1, description="Tasks run at once (each in its own real environment).",
                             json_schema_extra=_RUNTIME)
    max_retries: int = Field(5, ge=0, description="HTTP retries per agent request (429, 5xx, timeouts).",
                             json_schema_extra=_RUNTIME)
    timeout_s: float = Field(600.0, gt=0, description="HTTP timeout per agent request, seconds.",
                             json_schema_extra=_RUNTIME)
    max_response_bytes: int | None = max_response_field()
    progress: bool = Field(True, description="Show a progress bar (off when not a terminal).",
                           json_schema_extra=_RUNTIME)

    @field_validator("domains")
    @classmethod
    def _split_commas(cls, value: list[str]) -> list[str]:
        return [part.strip() for item in value for part in item.split(",") if part.strip()]

    @model_validator(mode="after")
    def _agent_or_imagination(self) -> AgentPredConfig:
        if (self.agent_base_url is None) == (self.model is None):
            raise PydanticCustomError("agent", "give exactly one of --agent-base-url (with --agent-model) "
                                      "and --model (an agent imagining with that world model, e.g. --model "
                                      "retrieval, offline)")
        if self.agent_base_url is not None and not self.agent_model:
            raise PydanticCustomError("agent", "--agent-base-url needs --agent-model")
        if self.model is not None and self.agent_model:
            raise PydanticCustomError("agent", "--agent-model names the model at --agent-base-url; with "
                                      "--model the agent is the world model imagining")
        if self.keep_heldout and (self.model != "retrieval" or self.model_base_url):
            raise PydanticCustomError("agent", "--keep-heldout applies to --model retrieval only")
        if self.model is None and (self.model_base_url or self.model_corpus):
            raise PydanticCustomError("agent", "--model-base-url and --model-corpus need --model")
        return self

    @property
    def agent_name(self) -> str:
        """What the agent is called in requests and its cached answers."""
        if self.model is None:
            return self.agent_model or ""
        return f"imagining:{self.model}{'+heldout' * self.keep_heldout}"

    def agent_endpoint(self) -> Endpoint:
        """The served agent's :class:`Endpoint` (named :attr:`agent_name`)."""
        return Endpoint(self.agent_name, self.agent_base_url, self.agent_api_key)

    def owns_output(self, field: str, path: Path) -> bool:
        """Whether ``path`` is a run folder an earlier version of this command wrote (see
        :mod:`agentworld.outputs`; later ones carry its lock file)."""
        from agentworld.eval.runfolder import holds_format

        return holds_format(path, FORMAT)

"""``agentworld eval agent-predictions``: how well the *agent* predicts what its own actions will show.

At each step of a task the agent (an OpenAI-compatible endpoint, ``--agent-base-url``; or, with
``--model`` instead, a scripted agent imagining with that world model:
:mod:`~agentworld.eval.agentpred_imagine`) predicts the observation of the action about to run; the
action then runs in the domain's real environment and the prediction is
scored against the real observation with the rule tier, beside an empty prediction and "repeat the
previous observation". The run folder (``--out``) holds ``config.json``, the journal ``steps.jsonl``
(one row per step, one closing row per task), the agent's answers ``responses.jsonl`` and
``summary.json``; running the same command again resumes without asking the agent again.

Only pydantic is imported at module level (the CLI imports the config for ``--help``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from agentworld.endpoints import AgentEndpoint, Endpoint, ModelEndpoint

if TYPE_CHECKING:
    from agentworld.eval.agentpred_summary import PredictionSummary
    from agentworld.eval.agentpred_tasks import PredictionTask
    from agentworld.models.base import ChatBackend

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


def _identity(config: AgentPredConfig, tasks: list[PredictionTask]) -> dict[str, Any]:
    """What ``config.json`` stores and a resumed run must match: never a runtime field or a key.

    The URLs are left out too: the model name identifies the agent or world model (and keys the
    cached answers), the URL only says where it is served today — a restarted server on another port
    resumes.
    """
    import hashlib

    from agentworld.io import dumps

    runtime = {name for name, info in AgentPredConfig.model_fields.items()
               if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get("runtime")}
    fields = {name: value for name, value in config.model_dump(mode="json").items()
              if name not in runtime and name not in ("agent_base_url", "model_base_url")}
    fields["tasks_sha256"] = hashlib.sha256(dumps([vars(t) for t in tasks]).encode()).hexdigest()
    return {"format": FORMAT, **fields}


def select_tasks(config: AgentPredConfig) -> list[PredictionTask]:
    """The tasks of this run: the file's or the built-in ones, filtered by ``--domains`` and ``--limit``."""
    from agentworld.errors import AgentWorldError
    from agentworld.eval.agentpred_tasks import builtin_tasks, load_tasks

    tasks = load_tasks(config.tasks) if config.tasks is not None else builtin_tasks(config.domains)
    if config.domains:
        tasks = [t for t in tasks if t.domain in config.domains]
        if not tasks:
            raise AgentWorldError(f"{config.tasks}: no task of the domains {', '.join(config.domains)}")
    return tasks[:config.limit] if config.limit else tasks


def run_agent_predictions(config: AgentPredConfig, agent: ChatBackend | None = None) -> PredictionSummary:
    """Run (or resume) every task, write ``summary.json`` and return the summary.

    Args:
        agent: answer with this in-process backend instead of the agent ``config`` names (a
            scripted one); ``config.agent_name`` keys its cached answers.

    Raises:
        AgentWorldError: bad tasks or run folder; or, after the summary of what finished is written,
            tasks that failed (an unreachable agent, a dying environment) — rerun to resume them.
    """
    import asyncio

    from agentworld.eval.agentpred_runner import run_tasks
    from agentworld.eval.agentpred_summary import summarise
    from agentworld.io import atomic_write_text, dumps, read_journal

    tasks = select_tasks(config)
    if agent is not None:
        backend = agent
    elif config.model is not None:
        from agentworld.eval.agentpred_imagine import imagining_agent

        backend = imagining_agent(config, tasks)
    else:
        backend = config.agent_endpoint().backend(concurrency=config.concurrency,
                                                  max_retries=config.max_retries, timeout_s=config.timeout_s)
    from agentworld.eval.runfolder import open_typed_run

    open_typed_run(config.out, _identity(config, tasks), kind="an agent-predictions")
    failures = asyncio.run(run_tasks(config, tasks, backend))
    summary = summarise(read_journal(config.out / "steps.jsonl"), len(tasks))
    atomic_write_text(config.out / "summary.json", dumps(summary.model_dump(mode="json")) + "\n")
    if failures:
        from agentworld.endpoints import secret
        from agentworld.errors import AgentWorldError
        from agentworld.redact import redact_text

        first = redact_text(failures[0], [secret(config.agent_api_key), secret(config.model_api_key)])
        raise AgentWorldError(f"{len(failures)} task(s) did not finish (first: {first}); the finished "
                              f"steps are kept in {config.out}: run the same command again to resume")
    return summary

"""``agentworld eval agent-predictions``: how well the *agent* predicts what its own actions will show.

At each step of a task the agent (an OpenAI-compatible endpoint, ``--agent-base-url``; or, with
``--model`` instead, a scripted agent imagining with that world model:
:mod:`~agentworld.eval.agentpred.imagine`) predicts the observation of the action about to run; the
action then runs in the domain's real environment and the prediction is
scored against the real observation with the rule tier, beside an empty prediction and "repeat the
previous observation". The run folder (``--out``) holds ``config.json``, the journal ``steps.jsonl``
(one row per step, one closing row per task), the agent's answers ``responses.jsonl`` and
``summary.json``; running the same command again resumes without asking the agent again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentworld.eval.agentpred.config import FORMAT, AgentPredConfig

if TYPE_CHECKING:
    from agentworld.eval.agentpred.summary import PredictionSummary
    from agentworld.eval.agentpred.tasks import PredictionTask
    from agentworld.models.base import ChatBackend


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
    from agentworld.eval.agentpred.tasks import builtin_tasks, load_tasks

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

    from agentworld.eval.agentpred.runner import run_tasks
    from agentworld.eval.agentpred.summary import summarise
    from agentworld.io import atomic_write_text, dumps, read_journal

    tasks = select_tasks(config)
    if agent is not None:
        backend = agent
    elif config.model is not None:
        from agentworld.eval.agentpred.imagine import imagining_agent

        backend = imagining_agent(config, tasks)
    else:
        backend = config.agent_endpoint().backend(concurrency=config.concurrency,
                                                  max_retries=config.max_retries, timeout_s=config.timeout_s,
                                                  max_response_bytes=config.max_response_bytes)
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

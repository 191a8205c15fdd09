"""``agentworld eval closed-loop``: the sim-to-real gap when the agent drives both sides.

Benchmarks score a world model one turn at a time with the true history (teacher forcing); an RL
run never gives it that: the agent acts on what the simulator showed, so one wrong observation
changes every later action. Here the same agent runs each task twice from the same state and seed —
in the domain's real environment and in the simulator (:class:`~agentworld.sim.session.Simulator`,
under each *arm*: with or without the ledger and the router) — and the run reports, per domain and
task, the fidelity of every simulated observation against the real environment's answer to the same
action (rule tier; rubric with a judge), the first turn where the two episodes' actions diverge,
and whether the task's check agrees. The run folder (``--out``) holds ``config.json``, the journal
``episodes.jsonl`` (one row per real episode, one per task and arm), the cached answers
(``responses.jsonl``, ``world.jsonl``, ``judge.jsonl``), ``report.json`` and ``report.html``;
running the same command again resumes without repeating what finished.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentworld.eval.closedloop.config import FORMAT, ClosedLoopConfig

if TYPE_CHECKING:
    from agentworld.eval.closedloop.agent import PolicyFactory
    from agentworld.eval.closedloop.tasks import ClosedLoopTask
    from agentworld.models.base import ChatBackend


def _identity(config: ClosedLoopConfig, tasks: list[ClosedLoopTask]) -> dict[str, Any]:
    """What ``config.json`` stores and a resumed run must match: no runtime field, key or URL."""
    import hashlib

    from agentworld.io import dumps

    runtime = {name for name, info in ClosedLoopConfig.model_fields.items()
               if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get("runtime")}
    fields = {name: value for name, value in config.model_dump(mode="json").items()
              if name not in runtime and not name.endswith("_base_url") and name != "tasks"}
    fields["tasks_sha256"] = hashlib.sha256(dumps([vars(t) for t in tasks]).encode()).hexdigest()
    return {"format": FORMAT, **fields}


def select_tasks(config: ClosedLoopConfig) -> list[ClosedLoopTask]:
    """The tasks of this run: the file's, filtered by ``--domains`` and ``--limit``."""
    from agentworld.errors import AgentWorldError
    from agentworld.eval.closedloop.tasks import load_tasks

    tasks = load_tasks(config.tasks)
    if config.domains:
        tasks = [t for t in tasks if t.domain in config.domains]
        if not tasks:
            raise AgentWorldError(f"{config.tasks}: no task of the domains {', '.join(config.domains)}")
    if config.scripted_agent:
        bare = [t.id for t in tasks if not t.candidates]
        if bare:
            raise AgentWorldError(f"{config.tasks}: task {bare[0]!r} lists no candidates for "
                                  "--scripted-agent")
    return tasks[:config.limit] if config.limit else tasks


def run_closed_loop(config: ClosedLoopConfig, agent: ChatBackend | PolicyFactory | None = None,
                    model: ChatBackend | None = None) -> dict[str, Any]:
    """Run (or resume) every task under every arm; write ``report.json`` and ``report.html``; return it.

    Args:
        agent: drive the episodes with this instead of what ``config`` names: an in-process chat
            backend (asked like the endpoint; a scripted one) or a policy factory
            (:class:`~agentworld.eval.closedloop.agent.PolicyFactory`).
        model: the world model instead of the one ``config`` names (the caller closes it).

    Raises:
        AgentWorldError: bad tasks or run folder; or, after the report of what finished is written,
            tasks that failed (an unreachable endpoint, a dying environment): rerun to resume them.
    """
    import asyncio

    from agentworld.endpoints import secret
    from agentworld.eval.closedloop.runner import Backends, run_tasks, write_reports

    tasks = select_tasks(config)
    client: dict[str, Any] = {"concurrency": config.concurrency * 2, "max_retries": config.max_retries,
                              "timeout_s": config.timeout_s, "max_response_bytes": config.max_response_bytes}
    owned: list[Any] = []
    world = model or config.model_endpoint().backend(domains=sorted({t.domain for t in tasks}), **client)
    owned += [] if model else [world]
    if agent is None and not config.scripted_agent:
        assert config.agent_base_url is not None and config.agent_model is not None
        agent = config.agent_endpoint().backend(**client)
        owned.append(agent)
    judge = None
    if config.judge_model:
        judge = config.judge_endpoint().backend(**client)
        owned.append(judge)
    from agentworld.eval.runfolder import open_typed_run

    open_typed_run(config.out, _identity(config, tasks), kind="a closed-loop")

    async def run() -> list[str]:
        try:
            return await run_tasks(config, tasks, Backends(agent=agent, world=world, judge=judge))
        finally:  # on the loop their connections live on (aiohttp warns of a session left open)
            for backend in owned:
                closer = getattr(backend, "aclose", None)
                if closer is not None:
                    await closer()

    failures = asyncio.run(run())
    report = write_reports(config, len(tasks))
    if failures:
        from agentworld.errors import AgentWorldError
        from agentworld.redact import redact_text

        keys = [secret(config.agent_api_key), secret(config.model_api_key), secret(config.judge_api_key)]
        first = redact_text(failures[0], keys)
        raise AgentWorldError(f"{len(failures)} task(s) did not finish (first: {first}); the finished ones "
                              f"are kept in {config.out}: run the same command again to resume")
    return report

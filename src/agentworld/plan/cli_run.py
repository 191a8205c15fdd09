"""The body of ``agentworld plan``: inputs read and checked, the episode rebuilt, the ranking rendered.

Why the episode is rebuilt by replaying: the planner forks a live :class:`Simulator`, so the
history a user gives is stepped into a fresh episode with a scripted model answering the recorded
observations (the ledger learns its facts as it would have), and the world model takes over after.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentworld.domains.hooks import domain_actions
from agentworld.errors import AgentWorldError, DataError
from agentworld.inputs import parse_json, read_text
from agentworld.plan.cli import PlanConfig
from agentworld.plan.records import PlanResult, RankedCandidate

__all__ = ["load_history", "parse_candidate", "plan_from_config", "render_plan"]

MAX_HISTORY_BYTES = 20_000_000


def parse_candidate(text: str, domain: str, index: int) -> Any:
    """``--candidate`` text as an action: JSON when it starts with ``[``/``{``, else a typed line."""
    stripped = text.strip()
    if stripped[:1] in ("[", "{"):
        try:
            return json.loads(stripped)
        except ValueError as exc:
            raise AgentWorldError(f"--candidate {index}: not valid JSON ({exc})") from None
    try:
        action = domain_actions(domain).from_line(text)
    except ValueError as exc:
        raise AgentWorldError(f"--candidate {index}: {exc}") from None
    if action is None:
        raise AgentWorldError(f"--candidate {index}: empty action")
    return action


def load_history(path: Path) -> list[tuple[Any, str]]:
    """The ``--history`` file's (action, observation) pairs; errors name the file and the item."""
    try:
        items = parse_json(read_text(path, max_bytes=MAX_HISTORY_BYTES, what="--history file"), path=path)
    except DataError as exc:
        raise AgentWorldError(f"--history {exc}") from None
    if not isinstance(items, list):
        raise AgentWorldError(f"--history {path}: expected a JSON list of {{action, observation}} objects")
    pairs = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "action" not in item or not isinstance(item.get("observation"), str):
            raise AgentWorldError(f"--history {path}: item {i}: expected an object with 'action' and a "
                                  "string 'observation'")
        pairs.append((item["action"], item["observation"]))
    return pairs


async def plan_from_config(config: PlanConfig) -> PlanResult:
    """Rebuild the episode, build the planner from ``config`` and plan (nothing runs for real)."""
    from agentworld.models.cache import ResponseCache
    from agentworld.models.scripted import ScriptedBackend
    from agentworld.plan.agents import Agent, ModelAgent
    from agentworld.plan.planner import Planner
    from agentworld.plan.scorers import JudgeScorer, RuleCheck, RuleScorer, Scorer
    from agentworld.sim.session import Simulator
    from agentworld.sim.types import WorldSpec

    candidates = [parse_candidate(text, config.domain, i) for i, text in enumerate(config.candidate, 1)]
    if not candidates and not (config.agent_base_url and config.agent_model):
        raise AgentWorldError("no candidate actions: give --candidate (repeat it), or an agent to propose "
                              "them (--agent-base-url and --agent-model)")
    if config.horizon > 1 and not (config.agent_base_url and config.agent_model):
        raise AgentWorldError("--horizon above 1 needs an agent to continue the rollouts (--agent-base-url "
                              "and --agent-model)")
    use_judge = config.scorer == "judge" or (config.scorer == "auto" and config.judge_model is not None)
    if use_judge and not config.judge_model:
        raise AgentWorldError("--scorer judge needs --judge-model (and --judge-base-url for a served judge)")
    history = load_history(config.history) if config.history is not None else []
    spec = WorldSpec(domain=config.domain, initial_state=config.initial_state or "")
    world = config.model_endpoint().backend(domains=[config.domain])
    scorer: Scorer
    if use_judge:
        assert config.judge_model is not None
        scorer = JudgeScorer(config.judge_endpoint().backend())
    else:
        rule = RuleCheck(errors=tuple(config.error_pattern), must_contain=tuple(config.must_contain),
                         end_at_prompt=config.end_at_prompt)
        scorer = RuleScorer(rule)
    agent: Agent | None = None
    if config.agent_base_url and config.agent_model:
        agent_backend = config.agent_endpoint().backend()
        agent = ModelAgent(agent_backend, spec)
    cache = ResponseCache(config.cache)
    tag = "predicted_observation"
    replay = ScriptedBackend([f"<{tag}>\n{obs}\n</{tag}>" for _, obs in history])
    sim = Simulator(replay)
    try:
        await sim.areset(spec, seed=config.seed)
        for i, (action, _) in enumerate(history):
            try:
                await sim.astep(action)
            except AgentWorldError as exc:
                raise AgentWorldError(f"--history {config.history}: item {i}: {exc}") from None
        sim.model, sim.cache = world, cache
        planner = Planner(scorer, agent=agent, k=config.max_candidates, horizon=config.horizon,
                          samples=config.samples, concurrency=config.concurrency, cache=cache,
                          task=config.task)
        return await planner.aplan(sim, candidates or None)
    finally:
        cache.close()
        sim.close()
        for backend in (world, getattr(scorer, "backend", None), getattr(agent, "backend", None)):
            close = getattr(backend, "aclose", None)
            if close is not None:
                await close()


def action_text(action: Any) -> str:
    """An action as one short line: a terminal's keystrokes, else compact JSON."""
    steps = action if isinstance(action, list) else [action]
    if all(isinstance(s, dict) and isinstance(s.get("keystrokes"), str) for s in steps):
        return "".join(s["keystrokes"] for s in steps).strip().replace("\n", " ⏎ ")
    return json.dumps(action, ensure_ascii=False)


def _block(candidate: RankedCandidate, max_lines: int) -> list[str]:
    verdicts = ", ".join(sorted({s.verdict.label + (f" ({s.verdict.detail})" if s.verdict.detail else "")
                                 for s in candidate.samples}))
    lines = [f"#{candidate.index + 1}  score {candidate.score:.2f}  {action_text(candidate.action)}",
             f"    {verdicts}"]
    shown = candidate.observation.rstrip().splitlines()
    if len(shown) > max_lines:
        shown = [f"… {len(shown) - max_lines} lines above", *shown[-max_lines:]]
    return lines + [f"    │ {line}" for line in shown]


def render_plan(result: PlanResult, max_lines: int = 8) -> str:
    """The ranking as text: best first, each with its verdicts and its imagined observation."""
    head = (f"{len(result.ranked)} candidates, horizon {result.horizon}, {result.samples} sample(s) each, "
            f"scorer {result.scorer}; best first (#N: position as given)")
    return "\n".join([head, *("\n".join(_block(c, max_lines)) for c in result.ranked)])

"""Sim RL rollouts: an agent acts in the Simulator under a perturbation curriculum; episodes are exported.

Why a curriculum: agents trained only on clean worlds break on the first timeout, so the fault
rate rises linearly over episodes (``rate_start`` → ``rate_end``) for chosen fault kinds, and each
episode may carry its own fictional-world facts. Faults are drawn by the Simulator's seeded
injector, so every injected fault is recorded per step (turn ``meta["fault"]``) exactly as the
Simulator reported it in ``StepResult.fault``.

The agent is any :class:`ChatBackend`. It is shown the task and the observations and answers with
one JSON action (MCP: ``{"tool_name": ..., "arguments": {...}}``; terminal: ``{"keystrokes": ...}``
or a list of them), or ``DONE`` to end. Episodes are recorded in the unified schema
(:class:`~agentworld.schema.Trajectory`, per-turn meta: source, fault, is_error, reward) and export
to generic RL rows and to TRL (``environment_factory`` + a dataset whose rows carry each episode's
world spec, so the curriculum carries into GRPO training).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentworld.io import atomic_write_jsonl
from agentworld.models.base import ChatBackend, ChatRequest
from agentworld.schema import Message, Trajectory, Turn
from agentworld.sim.agent import agent_system_prompt, parse_agent_action
from agentworld.sim.curriculum import Curriculum
from agentworld.sim.episode import EpisodeTracker
from agentworld.sim.history import ActionError
from agentworld.sim.session import Simulator
from agentworld.sim.types import FaultRule, SessionState, WorldSpec

__all__ = ["NO_TOOL", "Episode", "TaskReward", "episode_rl_rows", "fault_notes",
           "run_rollouts", "trajectory_rows", "write_episodes"]

TaskReward = Callable[[SessionState], float]


class Episode(BaseModel):
    """One rollout: the trajectory (unified schema), the agent's prompts/replies, and the reward."""

    model_config = ConfigDict(frozen=True)

    index: int
    seed: int
    fault_rate: float
    trajectory: Trajectory
    prompts: list[list[Message]] = Field(default_factory=list)
    """The messages the agent saw before each of its replies (aligned with ``completions``)."""
    completions: list[str] = Field(default_factory=list)
    reward: float = 0.0
    done: bool = False
    """The agent said it was done: the episode terminated."""
    truncated: bool = False
    """The turn limit ended the episode before the agent said it was done."""


def _agent_error() -> dict[str, Any]:
    return {"source": "agent_error", "fault": None, "is_error": True}


NO_TOOL = "no tool this fault applies to"
"""The note of a fault rule whose tools the episode never called: its 0 faults measure nothing."""


def fault_notes(idle: Iterable[FaultRule]) -> list[str]:
    """One note per fault rule no call of the episode was eligible for, e.g.
    ``stale: no tool this fault applies to was called (get_booking, list_bookings)``."""
    return [f"{rule.kind}: {NO_TOOL} was called ({', '.join(rule.tools)})" if rule.tools
            else f"{rule.kind}: no call was made" for rule in idle]


async def arun_episode(agent: ChatBackend, world_model: ChatBackend | None, spec: WorldSpec, *, index: int,
                       seed: int, fault_rate: float, max_turns: int, task: str = "",
                       task_reward: TaskReward | None = None, agent_model: str = "",
                       agent_temperature: float | None = None,
                       agent_max_tokens: int | None = None) -> Episode:
    """Run one episode; the agent's invalid replies are answered with an error and count as turns."""
    sim = Simulator(world_model)
    try:
        initial = await sim.areset(spec, seed=seed)
        messages = [Message(role="system", content=agent_system_prompt(spec, task)),
                    Message(role="user", content=initial or "(the environment is ready)")]
        turns: list[Turn] = []
        prompts: list[list[Message]] = []
        completions: list[str] = []
        episode = EpisodeTracker(max_turns)
        episode.start()
        meta: dict[str, Any]
        while episode.active:
            request = ChatRequest(messages=tuple(messages), model=agent_model, temperature=agent_temperature,
                                  max_tokens=agent_max_tokens, seed=seed * 1000 + len(turns))
            reply = (await agent.complete(request)).content
            prompts.append(list(messages))
            completions.append(reply)
            messages.append(Message(role="assistant", content=reply))
            try:
                action = parse_agent_action(reply, spec.domain)
            except ActionError as exc:
                step, meta = episode.record(exc), _agent_error()
            else:
                if action is None:
                    episode.finish()
                    break
                try:
                    result = await sim.astep(action)
                except ActionError as exc:
                    step, meta = episode.record(exc), _agent_error()
                else:
                    step = episode.record(result)
                    kind = result.fault.kind if result.fault else None
                    meta = {"source": result.source, "fault": kind, "is_error": result.is_error,
                            "sim_turn": result.turn, "output_truncated": step.output_truncated,
                            "fault_without_effect": result.meta.get("fault_without_effect")}
            turns.append(Turn(action=reply, observation=step.observation,
                              meta={**meta, "reward": step.reward}))
            messages.append(Message(role="user", content=step.observation))
        episode.add_reward(float(task_reward(sim.state())) if task_reward is not None else 0.0)
        reward, done = episode.total_reward, episode.terminated
        if turns:
            turns[-1] = turns[-1].model_copy(update={"meta": {**turns[-1].meta, "reward": reward}})
        trajectory = Trajectory(id=f"rollout-{index}", domain=spec.domain, task=task or None,
                                system_prompt=messages[0].content, turns=tuple(turns),
                                meta={"episode": index, "seed": seed, "fault_rate": fault_rate,
                                      "reward": reward, "done": done, "truncated": episode.truncated,
                                      "facts": list(spec.controls.facts),
                                      "fault_notes": fault_notes(sim.idle_fault_rules())})
        return Episode(index=index, seed=seed, fault_rate=fault_rate, trajectory=trajectory, prompts=prompts,
                       completions=completions, reward=reward, done=done, truncated=episode.truncated)
    finally:
        await sim.aclose()


def run_rollouts(agent: ChatBackend, world_model: ChatBackend | None, spec: WorldSpec, curriculum: Curriculum,
                 episodes: int, max_turns: int, *, task: str = "", task_reward: TaskReward | None = None,
                 seed: int = 0, **agent_options: Any) -> Iterator[Episode]:
    """Yield ``episodes`` rollouts, episode ``i`` with the curriculum's spec and seed ``seed + i``.

    ``agent_options``: ``agent_model``, ``agent_temperature``, ``agent_max_tokens``.
    """
    for i in range(episodes):
        episode_spec = curriculum.spec_for(spec, i, episodes)
        yield asyncio.run(arun_episode(agent, world_model, episode_spec, index=i, seed=seed + i,
                                       fault_rate=curriculum.rate(i, episodes), max_turns=max_turns,
                                       task=task,
                                       task_reward=task_reward, **agent_options))


# -- export ----------------------------------------------------------------------------------------

def write_episodes(path: str | Path, episodes: Iterable[Episode]) -> int:
    """Write the episodes' trajectories (unified schema) as JSONL; returns how many."""
    rows = [e.trajectory.model_dump(mode="json") for e in episodes]
    atomic_write_jsonl(path, rows)
    return len(rows)


def episode_rl_rows(episodes: Iterable[Episode]) -> Iterator[dict[str, Any]]:
    """One ``{prompt, completion, reward}`` row per agent turn; reward is the episode's return."""
    for e in episodes:
        for prompt, completion in zip(e.prompts, e.completions, strict=True):
            yield {"prompt": [m.model_dump() for m in prompt], "completion": completion, "reward": e.reward,
                   "episode": e.index}


def trajectory_rows(episodes: Iterable[Episode]) -> Iterator[dict[str, Any]]:
    """One ``{trajectory, rewards}`` row per episode (per-turn rewards; the task reward is on the last)."""
    for e in episodes:
        yield {"trajectory": e.trajectory.model_dump(mode="json"),
               "rewards": [float(t.meta.get("reward", 0.0)) for t in e.trajectory.turns]}

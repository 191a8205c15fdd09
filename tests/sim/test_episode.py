"""One episode object for every adapter: the turn limit truncates, a cut-off model answer does not."""

from __future__ import annotations

from typing import Any

import pytest

from agentworld.models.base import ChatResult
from agentworld.models.scripted import ScriptedBackend
from agentworld.serve.adapters import make_trl_environment
from agentworld.serve.adapters.openenv import EpisodeCore
from agentworld.sim import ActionError, Simulator, WorldSpec
from agentworld.sim.curriculum import Curriculum
from agentworld.sim.episode import EpisodeTracker
from agentworld.train.rollout import run_rollouts

TOOLS = [{"name": "get_user", "description": "Look up a user.",
          "inputSchema": {"type": "object", "properties": {"user_id": {"type": "string"}}}}]
SPEC = WorldSpec(domain="mcp", tools=TOOLS)
CALL = {"tool_name": "get_user", "arguments": {"user_id": "u1"}}
WHOLE = "<predicted_observation>\n{\"name\": \"Ada\"}\n</predicted_observation>"
CUT = ChatResult(content="<predicted_observation>\n{\"name\": \"Ad\n</predicted_observation>",
                 finish_reason="length")


def cut_then_whole() -> ScriptedBackend:
    """A world model whose first answer was cut off at max_tokens."""
    return ScriptedBackend([CUT], default=WHOLE)


def test_tracker_keeps_terminated_truncated_and_output_truncated_apart() -> None:
    tracker = EpisodeTracker(3, reward_fn=lambda result: 1.0,
                             terminate_fn=lambda result: "done" in result.observation)
    sim = Simulator(ScriptedBackend([CUT, "<predicted_observation>done</predicted_observation>"]))
    sim.reset(SPEC)
    tracker.start()
    cut = tracker.record(sim.step(CALL))
    assert cut.output_truncated and not cut.truncated and not cut.terminated and tracker.active
    assert not tracker.record(ActionError("bad")).done
    last = tracker.record(sim.step(CALL))
    assert last.terminated and not last.truncated and tracker.total_reward == 2.0
    with pytest.raises(RuntimeError, match="not active"):
        tracker.record(ActionError("after the end"))
    sim.close()


def make_gym(model: ScriptedBackend, max_turns: int) -> Any:
    pytest.importorskip("gymnasium")
    from agentworld.serve.adapters.gym import SimEnv

    return SimEnv(Simulator(model), SPEC, max_turns=max_turns)


def test_gym_turn_limit_truncates_and_a_cut_off_answer_does_not() -> None:
    env = make_gym(cut_then_whole(), max_turns=2)
    env.reset(seed=1)
    _, _, terminated, truncated, info = env.step(CALL)
    assert info["output_truncated"] and (terminated, truncated) == (False, False)
    _, _, terminated, truncated, info = env.step(CALL)
    assert (terminated, truncated) == (False, True) and not info["output_truncated"]
    env.close()


def test_openenv_turn_limit_truncates_and_a_cut_off_answer_does_not() -> None:
    core = EpisodeCore(Simulator(cut_then_whole()), SPEC, max_turns=2)
    spec, seed = core.start(1, "e", {})
    core.simulator.reset(spec, seed=seed)
    core.check_step()
    first = core.stepped(core.simulator.step(CALL))
    assert not first["done"] and first["metadata"]["output_truncated"]
    assert (first["metadata"]["terminated"], first["metadata"]["truncated"]) == (False, False)
    core.check_step()
    second = core.stepped(core.simulator.step(CALL))
    assert second["done"] and second["metadata"]["truncated"] and not second["metadata"]["terminated"]
    assert core.steps == 2
    core.simulator.close()


@pytest.mark.parametrize("asynchronous", [False, True])
def test_trl_turn_limit_truncates_and_a_cut_off_answer_does_not(asynchronous: bool) -> None:
    model = cut_then_whole()
    env = make_trl_environment(TOOLS, model=model, max_turns=2, asynchronous=asynchronous)()
    env.reset()

    def call() -> str:
        out = env.get_user(user_id="u1")
        if asynchronous:
            import asyncio

            out = asyncio.run(out)
        return str(out)

    call()
    assert env.results[-1].truncated and env.episode.active and not env.episode.truncated
    assert call() == '{"name": "Ada"}'
    assert env.episode.truncated and not env.episode.terminated
    assert call().startswith("Error: the episode has ended") and len(model.calls) == 2
    env.reset()
    assert env.episode.active and env.episode.turns == 0
    env.__exit__(None, None, None)


def agent_calls_then_done(calls: int) -> ScriptedBackend:
    return ScriptedBackend([f'{{"tool_name": "get_user", "arguments": {{"user_id": "u{i}"}}}}'
                            for i in range(calls)] + ["DONE"])


def test_rollout_turn_limit_truncates() -> None:
    agent = ScriptedBackend(default=lambda request: '{"tool_name": "get_user", "arguments": {}}')
    world = ScriptedBackend(default=WHOLE)
    (episode,) = run_rollouts(agent, world, SPEC, Curriculum(), episodes=1, max_turns=3)
    assert episode.truncated and not episode.done and len(episode.trajectory.turns) == 3
    assert episode.trajectory.meta["truncated"] is True


def test_rollout_cut_off_world_model_answer_does_not_end_the_episode() -> None:
    agent = agent_calls_then_done(2)
    (episode,) = run_rollouts(agent, cut_then_whole(), SPEC, Curriculum(), episodes=1, max_turns=5)
    assert episode.done and not episode.truncated and len(episode.trajectory.turns) == 2
    assert [t.meta["output_truncated"] for t in episode.trajectory.turns] == [True, False]
    agent.assert_complete()


"""`train rollout --ray`: episodes on Ray actors equal the in-process ones, come back in order when actors
finish out of order, name the failed episode, and a SIGKILLed run resumes without repeating episodes.

One local Ray instance (2 CPUs, loopback) serves the whole module; the agent and the world model are a
real OpenAI-compatible HTTP endpoint on 127.0.0.1 whose replies are scripted per episode.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentworld.endpoints import Endpoint
from agentworld.errors import AgentWorldError
from agentworld.sim.curriculum import Curriculum
from agentworld.sim.types import WorldSpec
from agentworld.train.rollout import Episode, run_rollouts
from agentworld.train.rollout_jobs import EpisodeJob, curriculum_jobs, fingerprint, journal_path
from agentworld.train.rollout_ray import RayRolloutError, check_address, run_jobs_ray
from serving import chat_server

needs_ray = pytest.mark.extra("ray")

TOOLS = [{"name": "get_weather", "description": "Weather for a city.",
          "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}}]
SPEC = WorldSpec(domain="mcp", tools=TOOLS)
CURRICULUM = Curriculum(fault_kinds=["server_error"], rate_start=0.0, rate_end=0.9)
CALL = 'Looking.\n{"tool_name": "get_weather", "arguments": {"city": "Oslo"}}'


def _world(body: dict[str, Any]) -> str:
    temp = len(body["messages"])
    return f'<predicted_observation>{{"city": "Oslo", "temp_c": {temp}}}</predicted_observation>'


class Script:
    """The endpoint's replies: two tool calls then DONE per episode (episode = request seed // 1000)."""

    def __init__(self, hold: dict[int, threading.Event] | None = None) -> None:
        self.hold = hold or {}
        self.agent_calls: dict[int, int] = {}
        self.finished: list[int] = []
        self.lock = threading.Lock()

    def __call__(self, path: str, body: dict[str, Any], headers: Any) -> str:
        if not path.startswith("/agent/"):
            return _world(body)
        episode = int(body["seed"]) // 1000
        with self.lock:
            self.agent_calls[episode] = self.agent_calls.get(episode, 0) + 1
        if episode in self.hold:
            assert self.hold[episode].wait(120), f"episode {episode} was never released"
        if len(body["messages"]) < 6:
            return CALL
        with self.lock:
            self.finished.append(episode)
        return "DONE"


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def _endpoints(url: str) -> tuple[Endpoint, Endpoint]:
    return Endpoint("agent", f"{url}/agent/v1", None), Endpoint("world", f"{url}/world/v1", None)


def _dumps(episodes: list[Episode]) -> list[dict[str, Any]]:
    return [e.model_dump(mode="json") for e in episodes]


@needs_ray
def test_same_episodes_as_in_process(ray_address: str) -> None:
    with chat_server(Script()) as url:
        agent, world = _endpoints(url)
        local = list(run_rollouts(agent.backend(), world.backend(), SPEC, CURRICULUM, 6, 5, task="weather",
                                  seed=3, agent_model="agent"))
        jobs = curriculum_jobs(SPEC, CURRICULUM, 6, 5, task="weather", seed=3, agent_model="agent")
        remote = list(run_jobs_ray(jobs, agent, world, actors=2, sessions_per_actor=2))
    assert _dumps(remote) == _dumps(local)
    assert [e.seed for e in remote] == [3, 4, 5, 6, 7, 8]
    assert any(t.meta["fault"] for e in remote for t in e.trajectory.turns), "no fault was injected"


@needs_ray
def test_order_kept_when_actors_finish_out_of_order(ray_address: str) -> None:
    """Episode 0 is held until episodes 1-3 are done, so it arrives after them; it is still yielded first."""
    release = threading.Event()
    script = Script(hold={0: release})
    arrived: list[str] = []

    def on_result(job: EpisodeJob, episode: Episode) -> None:
        arrived.append(job.key)
        if {"1", "2", "3"} <= set(arrived):
            release.set()

    with chat_server(script) as url:
        agent, world = _endpoints(url)
        jobs = curriculum_jobs(SPEC, CURRICULUM, 6, 5, task="weather", agent_model="agent")
        yielded = [e.index for e in run_jobs_ray(jobs, agent, world, actors=2, sessions_per_actor=2,
                                                  on_result=on_result)]
    assert yielded == [0, 1, 2, 3, 4, 5]
    assert arrived.index("0") > max(arrived.index(k) for k in ("1", "2", "3"))
    assert sorted(arrived) == ["0", "1", "2", "3", "4", "5"]


@needs_ray
def test_reorder_buffer_is_bounded(ray_address: str) -> None:
    """With ``window=3`` nothing is submitted three places past the next episode to yield: while episode 0
    is held (until 1 and 2 are done), episode 3 has not started although sessions are free."""
    release = threading.Event()
    script = Script(hold={0: release})
    started_3_after_0: list[bool] = []

    def on_result(job: EpisodeJob, episode: Episode) -> None:
        if job.key == "0":
            started_3_after_0.append(3 not in script.agent_calls)
        if {1, 2} <= set(script.finished):
            release.set()

    with chat_server(script) as url:
        agent, world = _endpoints(url)
        jobs = curriculum_jobs(SPEC, CURRICULUM, 5, 5, task="weather", agent_model="agent")
        yielded = [e.index for e in run_jobs_ray(jobs, agent, world, actors=2, sessions_per_actor=2, window=3,
                                                  on_result=on_result)]
    assert yielded == [0, 1, 2, 3, 4]
    assert script.finished.index(0) > max(script.finished.index(1), script.finished.index(2))
    assert started_3_after_0 == [True]


@needs_ray
def test_failed_episode_is_named_not_hung(ray_address: str) -> None:
    """An exception inside an actor stops the run with the episode's key; the others arrive first."""
    import functools

    from agentworld.train.rollout import arun_episode

    good = curriculum_jobs(SPEC, CURRICULUM, 3, 5, task="weather", agent_model="agent")
    bad_spec = WorldSpec(domain="no-such-domain")
    bad = EpisodeJob(key="ep-7", fingerprint=fingerprint({"bad": True}),
                     run=functools.partial(arun_episode, spec=bad_spec, index=7, seed=7, fault_rate=0.0,
                                           max_turns=2))
    arrived: list[str] = []
    with chat_server(Script()) as url:
        agent, world = _endpoints(url)
        stream = run_jobs_ray([*good[:1], bad, *good[1:]], agent, world, actors=1, sessions_per_actor=1,
                              on_result=lambda job, _: arrived.append(job.key))
        with pytest.raises(RayRolloutError, match=r"episode ep-7 failed .*unknown domain 'no-such-domain'") \
                as err:
            list(stream)
    assert err.value.key == "ep-7"
    assert "--resume" in str(err.value) and "\n" not in str(err.value)
    assert arrived == ["0"]


async def _die(agent: Any, world: Any) -> Episode:
    """An episode whose actor process exits (as when its node is lost)."""
    os._exit(1)


@needs_ray
def test_a_dead_actor_is_named_not_hung(ray_address: str) -> None:
    import ray

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    dead = EpisodeJob(key="ep-9", fingerprint=fingerprint({"dead": True}), run=_die)
    with chat_server(Script()) as url:
        agent, world = _endpoints(url)
        with pytest.raises(RayRolloutError, match=r"the Ray actor running episode ep-9 died") as err:
            list(run_jobs_ray([dead], agent, world, actors=1, sessions_per_actor=1))
    assert err.value.key == "ep-9" and "\n" not in str(err.value)


def _cli(out: Path, tools: Path, url: str, address: str | None, *extra: str) -> list[str]:
    """The rollout command line; ``address`` None runs the episodes in process."""
    ray = ["--ray", address] if address is not None else []
    return ["train", "rollout", "--tools", str(tools), "--out", str(out), "--episodes", "6",
            "--max-turns", "5", "--task", "weather", "--fault-kinds", "server_error", "--rate-end", "0.9",
            "--agent-base-url", f"{url}/agent/v1", "--agent-model", "agent",
            "--model-base-url", f"{url}/world/v1", "--model", "world", *ray, *extra]


def _wait_rows(path: Path, rows: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 240
    while not path.exists() or len(path.read_text().splitlines()) < rows:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, f"{path} never got {rows} rows"
        time.sleep(0.2)


@pytest.mark.parametrize("on_ray", [pytest.param(True, marks=needs_ray, id="ray"),
                                    pytest.param(False, id="local")])
def test_sigkilled_run_resumes_without_repeating_episodes(on_ray: bool, request: pytest.FixtureRequest,
                                                         tmp_path: Path) -> None:
    """The journal keeps what a killed run finished; --resume runs only the rest, the outputs equal a
    whole run's (in process), a rerun without --resume or with other settings is refused."""
    from typer.testing import CliRunner

    from agentworld.cli import app

    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"tools": TOOLS}))
    out = tmp_path / "episodes.jsonl"
    release = threading.Event()
    script = Script(hold={3: release})
    env = {**os.environ, "AGENTWORLD_AGENT_API_KEY": "a", "AGENTWORLD_MODEL_API_KEY": "w",
           "OPENAI_API_KEY": ""}
    try:
        with chat_server(script) as url:
            ray_address = request.getfixturevalue("ray_address") if on_ray else None
            one = ["--ray-actors", "1", "--sessions-per-actor", "1"] if on_ray else []
            args = _cli(out, tools, url, ray_address, *one)
            proc = subprocess.Popen([sys.executable, "-m", "agentworld", *args], env=env, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            try:
                _wait_rows(journal_path(out), 3, proc)
                while 3 not in script.agent_calls:
                    assert proc.poll() is None
                    time.sleep(0.1)
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.communicate()
            release.set()
            assert not out.exists() and script.finished == [0, 1, 2]
            journaled = [json.loads(line)["key"] for line in journal_path(out).read_text().splitlines()]
            assert journaled == ["0", "1", "2"]

            runner = CliRunner()
            refused = runner.invoke(app, _cli(out, tools, url, ray_address), env=env)
            assert refused.exit_code == 2 and "--resume" in refused.output
            changed = runner.invoke(app, [*_cli(out, tools, url, ray_address, "--resume"), "--seed", "9"],
                                    env=env)
            assert changed.exit_code == 2 and "other settings" in changed.output

            before = dict(script.agent_calls)
            resumed = runner.invoke(app, _cli(out, tools, url, ray_address, "--resume"), env=env)
            assert resumed.exit_code == 0, resumed.output
            again = {k: v - before.get(k, 0) for k, v in script.agent_calls.items() if v != before.get(k, 0)}
            assert sorted(again) == [3, 4, 5], again

            whole = tmp_path / "whole.jsonl"
            fresh = runner.invoke(app, _cli(whole, tools, url, None), env=env)
            assert fresh.exit_code == 0, fresh.output
    finally:
        release.set()
    assert out.read_text() == whole.read_text()
    assert out.with_suffix(".steps.jsonl").read_text() == whole.with_suffix(".steps.jsonl").read_text()
    assert [json.loads(line)["meta"]["episode"] for line in out.read_text().splitlines()] == list(range(6))
    assert not journal_path(out).exists()


@needs_ray
def test_world_sweep_on_ray_equals_in_process(ray_address: str, tmp_path: Path) -> None:
    """`--world --sweep-controls --ray`: the task checks travel to the actors; same rows and episodes."""
    from test_rollout_sweep import RESULT, _world_dir, agent_reply
    from typer.testing import CliRunner

    from agentworld.cli import app

    def answer(path: str, body: dict[str, Any], _headers: Any) -> str:
        if path.startswith("/agent/"):
            return agent_reply(body["messages"][-1]["content"])
        return f"<predicted_observation>{RESULT}</predicted_observation>"

    root = _world_dir(tmp_path / "w")
    outputs = []
    with chat_server(answer) as url:
        for name, ray in (("local", []), ("ray", ["--ray", ray_address, "--sessions-per-actor", "2"])):
            out = tmp_path / f"{name}.jsonl"
            result = CliRunner().invoke(app, [
                "train", "rollout", "--world", str(root), "--sweep-controls", "--out", str(out),
                "--episodes", "2", "--max-turns", "3", "--agent-base-url", f"{url}/agent/v1",
                "--agent-model", "agent",
                "--model-base-url", f"{url}/world/v1", "--model", "world", *ray],
                env={"AGENTWORLD_AGENT_API_KEY": "a", "AGENTWORLD_MODEL_API_KEY": "w"})
            assert result.exit_code == 0, result.output
            outputs.append((result.output, out.read_text(), out.with_suffix(".sweep.json").read_text()))
    assert outputs[0] == outputs[1]
    rows = [json.loads(line) for line in outputs[1][0].strip().splitlines()]
    assert [(r["controls"], r["success_rate"]) for r in rows] == [("clean", 1.0), ("denied", 0.0),
                                                                   ("intermittent", 1.0)]


def test_an_unreachable_ray_address_fails_fast() -> None:
    """Ray retries an unreachable head for minutes; the rollout says at once that nothing answers."""
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with pytest.raises(AgentWorldError, match=rf"--ray 127.0.0.1:{port}: nothing answers there"):
        check_address(f"127.0.0.1:{port}")
    with pytest.raises(AgentWorldError, match=r"--ray cluster: give 'local', 'auto', HOST:PORT"):
        check_address("cluster")
    check_address("local")

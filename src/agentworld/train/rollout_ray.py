"""Rollouts on a Ray cluster (optional: ``pip install "agentworld[ray]"``): simulator sessions as actors.

Each actor builds the agent and the world model itself (:func:`agentworld.endpoints.build_backend`,
from the endpoint settings, so no client object crosses the wire) and runs up to
``sessions_per_actor`` episodes at once, each in its own :class:`~agentworld.sim.session.Simulator`
session, on the actor's event loop. The driver hands each next episode to the least busy actor.

Episodes come back in whatever order they finish; the driver yields them in *job order* through a
reorder buffer bounded by ``window`` (no episode is submitted more than ``window`` places ahead of
the next one to yield), so a slow episode holds back at most ``window`` finished ones in memory.
``on_result`` sees each episode as soon as it is back, which is when the rollout journals it.

A failed episode (an exception in the actor, a dead actor or node) stops the run with an error that
names the episode; the actors are killed, the journal keeps what finished, ``--resume`` continues.
"""

from __future__ import annotations

import math
import socket
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from agentworld.endpoints import Endpoint
from agentworld.errors import AgentWorldError
from agentworld.redact import redact_text
from agentworld.train.rollout import Episode
from agentworld.train.rollout_jobs import EpisodeJob, EpisodeRun

__all__ = ["RayRolloutError", "check_address", "connect", "run_jobs_ray"]

MAX_ERROR_CHARS = 2000
"""How much of an actor's error (on one line: a CLI error is one line) the run's error quotes."""



class RayRolloutError(AgentWorldError):
    """An episode failed on Ray; ``key`` names it."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


class _SessionsActor:
    """Holds the backends; each ``run`` call is one simulator session (``max_concurrency`` at once).

    The clients allow at least as many requests in flight as there are sessions, so a large
    ``sessions_per_actor`` is not throttled by the client's default concurrency (16).
    """

    def __init__(self, agent: Endpoint, world: Endpoint, sessions: int) -> None:
        client = {"concurrency": max(16, sessions)}
        self.agent = agent.backend(**client)
        self.world = world.backend(**client)

    async def run(self, run: EpisodeRun) -> str:
        episode = await run(self.agent, self.world)
        return episode.model_dump_json()


def _ray() -> Any:
    try:
        import ray
    except ImportError:  # pragma: no cover - depends on the environment
        raise AgentWorldError('--ray needs Ray: pip install "agentworld[ray]"') from None
    return ray


def check_address(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast when nothing listens at a ``host:port`` or ``ray://host:port`` address.

    Why: Ray itself keeps retrying an unreachable head for minutes, which looks like a hang.

    Raises:
        AgentWorldError: the address has no port, or nothing accepts a connection there.
    """
    if address in ("local", "auto"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise AgentWorldError(f"--ray {address}: give 'local', 'auto', HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise AgentWorldError(f"--ray {address}: nothing answers there ({exc}); is the Ray head running?") \
            from None


def connect(address: str) -> Any:
    """Join the cluster at ``address``, in Ray's own terms: ``local`` starts a new local instance, ``auto``
    joins the running one (an error when there is none); an already initialised Ray is used as it is."""
    ray = _ray()
    if not ray.is_initialized():
        check_address(address)
        try:
            ray.init(address=address, include_dashboard=False,
                     ignore_reinit_error=True, log_to_driver=False)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise AgentWorldError(f"--ray {address}: could not connect to Ray ({exc})") from None
    return ray


def _failure(ray: Any, exc: BaseException, key: str, secrets: list[str | None]) -> RayRolloutError:
    cause = getattr(exc, "cause", None)
    if isinstance(exc, ray.exceptions.RayActorError):
        text = f"the Ray actor running episode {key} died: {exc}"
    else:
        inner = cause if isinstance(cause, BaseException) else exc
        text = f"episode {key} failed in its Ray actor: {type(inner).__name__}: {inner}"
    text = " ".join(redact_text(text, secrets).split())[:MAX_ERROR_CHARS]
    return RayRolloutError(f"{text} (finished episodes are journaled: rerun with --resume to continue)", key)


def run_jobs_ray(jobs: Sequence[EpisodeJob], agent: Endpoint, world: Endpoint, *,
                 address: str = "local", actors: int | None = None, sessions_per_actor: int = 4,
                 window: int | None = None,
                 on_result: Callable[[EpisodeJob, Episode], None] | None = None) -> Iterator[Episode]:
    """Run the jobs on Ray actors; yield the episodes in job order.

    Args:
        address: ``local`` (start a local instance), ``auto`` (the running cluster) or its address.
        actors: How many actors; default one per cluster CPU, no more than the jobs fill.
        sessions_per_actor: Episodes each actor runs at once.
        window: Bound of the reorder buffer; default twice the sessions in flight.
        on_result: Called with each episode as it arrives (any order), before it is yielded.

    Raises:
        RayRolloutError: an episode failed; its key is in the message.
    """
    if not jobs:
        return
    ray = connect(address)
    if actors is None:
        actors = max(1, int(ray.cluster_resources().get("CPU", 1)))
    actors = max(1, min(actors, math.ceil(len(jobs) / sessions_per_actor)))
    capacity = actors * sessions_per_actor
    window = max(1, window if window is not None else 2 * capacity)
    actor_class = ray.remote(num_cpus=1, max_concurrency=sessions_per_actor)(_SessionsActor)
    handles = [actor_class.remote(agent, world, sessions_per_actor) for _ in range(actors)]
    secrets = [agent.secret(), world.secret()]
    load = [0] * actors
    pending: dict[Any, tuple[int, int]] = {}
    buffer: dict[int, Episode] = {}
    submitted = emitted = 0
    try:
        while emitted < len(jobs):
            while submitted < len(jobs) and len(pending) < capacity and submitted - emitted < window:
                slot = min(range(actors), key=load.__getitem__)
                pending[handles[slot].run.remote(jobs[submitted].run)] = (submitted, slot)
                load[slot] += 1
                submitted += 1
            if emitted not in buffer:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    position, slot = pending.pop(ref)
                    load[slot] -= 1
                    job = jobs[position]
                    try:
                        episode = Episode.model_validate_json(ray.get(ref))
                    except (ray.exceptions.RayError, ValueError) as exc:
                        raise _failure(ray, exc, job.key, secrets) from None
                    if on_result is not None:
                        on_result(job, episode)
                    buffer[position] = episode
            while emitted in buffer:
                yield buffer.pop(emitted)
                emitted += 1
    finally:
        for handle in handles:
            ray.kill(handle)

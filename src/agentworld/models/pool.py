"""A pool of OpenAI-compatible endpoints serving one world model, behind a single :class:`ChatBackend`.

Why: an RL run or a large eval drives more requests than one GPU machine answers; the same model
served on several machines should be used as one backend by every command, without per-command
code. :func:`agentworld.endpoints.build_backend` returns a :class:`PoolBackend` when it is given
several base URLs.

Policy:

- **Least outstanding requests.** Each request goes to the healthy endpoint with the fewest
  requests in flight (ties: the one that has been sent the fewest, so a slow trickle is spread too).
- **Failover.** A connection error, a timeout or a 5xx marks the endpoint down and the request is
  sent again at once to another endpoint; a 429 sends it elsewhere without marking the endpoint
  down (it is alive, only busy); any other 4xx is the caller's error and fails at once. Each
  request may try every endpoint once plus ``max_retries`` more attempts, backing off (exponential,
  with jitter) only after it has tried all of them.
- **Health checks.** A down endpoint is probed again (``GET {base_url}/models``) once its backoff has
  passed; the backoff doubles with each consecutive failure, up to ``down_max_s``. When every endpoint
  is down, a request waits for the earliest backoff to end and goes there: the request is the probe.
- **Stats** per endpoint (requests, errors, failovers, p50/p95 latency, periods marked down) from
  :meth:`PoolBackend.endpoint_stats`; printed to stderr when the pool is closed. URLs are redacted.

The clock and the sleep are injectable, so the policy is tested without waiting.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agentworld.errors import BackendError
from agentworld.models.base import ChatRequest, ChatResult

LATENCY_WINDOW = 65_536
"""Latency quantiles are over an endpoint's most recent answers, so a server that runs for days keeps
constant memory."""


class Member(Protocol):
    """One endpoint of a pool: an :class:`~agentworld.models.openai_compat.OpenAIBackend` without retries."""

    base_url: str

    async def complete(self, request: ChatRequest) -> ChatResult: ...

    async def probe(self) -> bool: ...

    async def aclose(self) -> None: ...


@dataclass
class DownPeriod:
    """When an endpoint was taken out of rotation, and when it came back (None: still down)."""

    start: float
    end: float | None = None


@dataclass
class PoolMember:
    """One member's load, health and counters (mutated only on the event loop)."""

    index: int
    url: str
    backend: Member
    outstanding: int = 0
    sent: int = 0
    ok: int = 0
    errors: int = 0
    failovers: int = 0
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_WINDOW))
    up: bool = True
    failures: int = 0
    retry_at: float = 0.0
    probing: bool = False
    down_periods: list[DownPeriod] = field(default_factory=list)

    def mark_down(self, now: float, base_s: float, max_s: float) -> None:
        """Take the endpoint out of rotation until ``now`` + a backoff that doubles per failure in a row."""
        self.failures += 1
        self.retry_at = now + min(max_s, base_s * 2 ** (self.failures - 1))
        if self.up:
            self.up = False
            self.down_periods.append(DownPeriod(now))

    def mark_up(self, now: float) -> None:
        self.failures = 0
        if not self.up:
            self.up = True
            self.down_periods[-1].end = now

    def due(self, now: float) -> bool:
        """Down, its backoff over, and no probe running: time to check it again."""
        return not self.up and not self.probing and now >= self.retry_at


def choose(endpoints: Sequence[PoolMember], tried: set[int], now: float) -> PoolMember:
    """The endpoint for the next attempt of a request that already failed on ``tried``.

    Healthy endpoints not yet tried come first, then healthy ones; among them the fewest requests in
    flight, then the fewest sent. With none healthy, the down endpoint whose backoff ends first (the
    caller waits for it: that attempt is the probe).
    """
    up = [e for e in endpoints if e.up]
    fresh = [e for e in up if e.index not in tried] or up
    if fresh:
        return min(fresh, key=lambda e: (e.outstanding, e.sent, e.index))
    untried = [e for e in endpoints if e.index not in tried] or list(endpoints)
    return min(untried, key=lambda e: (e.retry_at, e.outstanding, e.index))


def _quantile(values: deque[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class PoolBackend:
    """Several endpoints of one model as one backend (see the module docstring for the policy).

    Args:
        members: one backend per endpoint, each making a single attempt per call (``max_retries=0``).
        name: the backend name results carry (``openai:<model>``, the same as with one endpoint).
        max_retries: attempts per request beyond one per endpoint.
        backoff_base_s, backoff_max_s: delay before a request's next round over all endpoints.
        down_base_s, down_max_s: how long an endpoint stays out after a failure (doubling per failure).
        clock, sleep: time source and sleep (tests pass fakes).
    """

    def __init__(self, members: Sequence[Member], *, name: str, max_retries: int = 5,
                 backoff_base_s: float = 0.5, backoff_max_s: float = 30, down_base_s: float = 1.0,
                 down_max_s: float = 30, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> None:
        if len(members) < 2:
            raise ValueError("a pool needs at least two endpoints")
        self.name = name
        self.endpoints = [PoolMember(i, m.base_url, m) for i, m in enumerate(members)]
        self.max_retries = max_retries
        self.backoff_base_s, self.backoff_max_s = backoff_base_s, backoff_max_s
        self.down_base_s, self.down_max_s = down_base_s, down_max_s
        self._clock, self._sleep = clock, sleep
        self._started = clock()
        self._probes: set[asyncio.Task[None]] = set()
        self._rng = random.Random()
        self._closed = False

    def __repr__(self) -> str:
        return f"PoolBackend(name={self.name!r}, endpoints={[e.url for e in self.endpoints]!r})"

    async def complete(self, request: ChatRequest) -> ChatResult:
        """Answer ``request`` on the least-loaded healthy endpoint, failing over to the others.

        Raises:
            BackendError: a 4xx other than 429 (at once), or every attempt failed.
        """
        started = self._clock()
        tried: set[int] = set()
        rounds = 0
        last: BackendError | None = None
        budget = len(self.endpoints) + self.max_retries
        for attempt in range(1, budget + 1):
            self._start_probes()
            endpoint = choose(self.endpoints, tried, self._clock())
            wait = endpoint.retry_at - self._clock() if not endpoint.up else 0.0
            if wait > 0:
                await self._sleep(min(wait, self.down_max_s))
            endpoint.outstanding += 1
            endpoint.sent += 1
            try:
                result = await endpoint.backend.complete(request)
            except BackendError as exc:
                endpoint.errors += 1
                if not exc.retryable:
                    raise
                last = exc
                if exc.status != 429:
                    endpoint.mark_down(self._clock(), self.down_base_s, self.down_max_s)
                if attempt < budget:
                    endpoint.failovers += 1
                tried.add(endpoint.index)
                if len(tried) >= len(self.endpoints) and attempt < budget:
                    tried.clear()
                    rounds += 1
                    await self._sleep(self._delay(rounds))
                continue
            finally:
                endpoint.outstanding -= 1
            endpoint.ok += 1
            endpoint.latencies.append(result.latency_s)
            endpoint.mark_up(self._clock())
            return result.model_copy(update={
                "attempts": attempt, "source": self.name,
                "meta": {**result.meta, "elapsed_s": self._clock() - started}})
        assert last is not None
        raise BackendError(f"{self.name}: gave up after {budget} attempts over {len(self.endpoints)} "
                           f"endpoints: {last}", retryable=True, status=last.status)

    def _delay(self, rounds: int) -> float:
        return min(self.backoff_max_s, self.backoff_base_s * 2 ** (rounds - 1)) * self._rng.uniform(0.5, 1.0)

    def _start_probes(self) -> None:
        """Check every down endpoint whose backoff has passed, in the background (requests never wait)."""
        if self._closed:
            return
        now = self._clock()
        for endpoint in self.endpoints:
            if endpoint.due(now):
                endpoint.probing = True
                task = asyncio.get_running_loop().create_task(self._probe(endpoint))
                self._probes.add(task)
                task.add_done_callback(self._probes.discard)

    async def _probe(self, endpoint: PoolMember) -> None:
        try:
            alive = await endpoint.backend.probe()
        except Exception:  # a probe that fails in any way means "still down"
            alive = False
        finally:
            endpoint.probing = False
        if alive:
            endpoint.mark_up(self._clock())
        else:
            endpoint.mark_down(self._clock(), self.down_base_s, self.down_max_s)

    def endpoint_stats(self) -> list[dict[str, Any]]:
        """Per endpoint: redacted URL, requests sent, errors, failovers (failed here, retried elsewhere),
        p50/p95 latency of its last :data:`LATENCY_WINDOW` answers in ms, whether it is down now, and its
        down periods (seconds since the pool was made)."""
        now = self._clock()
        rows = []
        for e in self.endpoints:
            p50, p95 = _quantile(e.latencies, 0.5), _quantile(e.latencies, 0.95)
            periods = [{"from_s": round(d.start - self._started, 3),
                        "to_s": None if d.end is None else round(d.end - self._started, 3)}
                       for d in e.down_periods]
            down_s = sum((now if d.end is None else d.end) - d.start for d in e.down_periods)
            rows.append({"url": e.url, "requests": e.sent, "ok": e.ok, "errors": e.errors,
                         "failovers": e.failovers,
                         "p50_ms": None if p50 is None else round(p50 * 1000, 1),
                         "p95_ms": None if p95 is None else round(p95 * 1000, 1),
                         "down": not e.up, "down_periods": periods, "down_s": round(down_s, 3)})
        return rows

    async def aclose(self) -> None:
        """Stop the probes, close every member, and print the per-endpoint stats to stderr once."""
        if self._closed:
            return
        self._closed = True
        for task in list(self._probes):
            task.cancel()
        await asyncio.gather(*self._probes, return_exceptions=True)
        for endpoint in self.endpoints:
            await endpoint.backend.aclose()
        if any(e.sent for e in self.endpoints):
            print(render_stats(self.endpoint_stats()), file=sys.stderr)

    async def __aenter__(self) -> PoolBackend:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def render_stats(rows: list[dict[str, Any]]) -> str:
    """The stats as a small table, one line per endpoint (URLs are already redacted)."""
    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    lines = ["world-model endpoints: requests errors failovers p50_ms p95_ms down_periods down_s"]
    for r in rows:
        lines.append(f"  {r['url']}  {r['requests']} {r['errors']} {r['failovers']} {ms(r['p50_ms'])} "
                     f"{ms(r['p95_ms'])} {len(r['down_periods'])} {r['down_s']:.1f}"
                     + ("  (down now)" if r["down"] else ""))
    return "\n".join(lines)


def write_endpoint_stats(backend: object, path: Path) -> list[dict[str, Any]] | None:
    """Write ``{"endpoints": [...]}`` to ``path`` (atomically) when ``backend`` is a pool; returns the rows.

    What a command's run output holds about its endpoints (``eval run``: ``endpoints.json`` in the run
    folder); a single endpoint has no such file.
    """
    from agentworld.io import atomic_write_text, dumps

    stats = getattr(backend, "endpoint_stats", None)
    if stats is None:
        return None
    rows: list[dict[str, Any]] = stats()
    atomic_write_text(path, dumps({"endpoints": rows}) + "\n")
    return rows

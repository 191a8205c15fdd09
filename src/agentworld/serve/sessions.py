"""Simulator sessions shared by the serving transports: create, get, close, idle expiry, limits.

The HTTP session API and the streamable-HTTP MCP server both hold many independent episodes
in one process. Each episode gets its own :class:`~agentworld.sim.session.Simulator` (so
histories, ledgers and fault streams never mix) and its own :class:`asyncio.Lock` (so two
steps of one episode never interleave, while different episodes run concurrently). Idle
sessions are dropped so a client that disappears does not hold memory forever, and
``max_sessions`` bounds what one server can be made to hold.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentworld.errors import AgentWorldError
from agentworld.models.base import ChatBackend
from agentworld.sim.types import SessionState, StepResult, WorldSpec

log = logging.getLogger(__name__)


class SimulatorLike(Protocol):
    """The part of :class:`agentworld.sim.session.Simulator` the servers use."""

    async def areset(self, spec: WorldSpec | None = None, *, seed: int = 0) -> str: ...

    async def astep(self, action: str | dict[str, Any] | list[Any]) -> StepResult: ...

    def state(self) -> SessionState: ...

    async def aclose(self) -> None: ...


SimulatorFactory = Callable[[], SimulatorLike]


def simulator_factory(backend: ChatBackend) -> SimulatorFactory:
    """A factory of real simulators sharing ``backend`` (imported late: this module owns no model)."""
    from agentworld.sim.session import Simulator

    return lambda: Simulator(backend)


class SessionNotFound(AgentWorldError):
    """No open session has this id (never created, closed, or expired)."""


class SessionLimitReached(AgentWorldError):
    """``max_sessions`` sessions are open and none is idle long enough to expire."""


@dataclass
class Session:
    """One episode: its simulator, the lock that serialises its steps, and when it was last used."""

    id: str
    simulator: SimulatorLike
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_used: float = field(default_factory=time.monotonic)
    busy: int = 0
    """Requests holding or waiting for the session; a busy session never expires."""


class SessionManager:
    """Open sessions by id, with per-session locks, idle expiry and a size limit.

    Args:
        factory: builds a fresh simulator for each session (sharing one model backend).
        idle_timeout_s: sessions unused this long are closed (checked on every create/get and
            by :meth:`run_reaper`).
        max_sessions: most open sessions.
        clock: monotonic time source (tests pass a fake one to expire sessions instantly).
        close_hint: how a client frees a session, for the message of :class:`SessionLimitReached`.
    """

    def __init__(self, factory: SimulatorFactory, *, idle_timeout_s: float = 600.0, max_sessions: int = 256,
                 clock: Callable[[], float] = time.monotonic,
                 close_hint: str = "close one (DELETE /v1/sessions/{id})") -> None:
        self._factory = factory
        self.idle_timeout_s = idle_timeout_s
        self.max_sessions = max_sessions
        self.close_hint = close_hint
        self._clock = clock
        self._sessions: dict[str, Session] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions

    async def create(self, spec: WorldSpec | None = None, seed: int = 0, *,
                     session_id: str | None = None) -> tuple[Session, str]:
        """Open a session and reset its simulator; return it and the initial observation.

        Raises:
            SessionLimitReached: ``max_sessions`` are open and none could be expired.
        """
        self._expire_now()
        if len(self._sessions) >= self.max_sessions:
            raise SessionLimitReached(f"{self.max_sessions} sessions are open (the --max-sessions limit); "
                                      f"{self.close_hint}, or wait for idle ones to expire "
                                      f"(--idle-timeout-s {self.idle_timeout_s:g})")
        sid = session_id or secrets.token_hex(16)
        if sid in self._sessions:
            raise ValueError(f"session {sid!r} is already open")
        # Registered before the first await, so a concurrent ``ensure`` finds it and waits on its lock.
        session = Session(sid, self._factory(), last_used=self._clock())
        self._sessions[sid] = session
        try:
            async with self.use(sid) as held:
                observation = await held.simulator.areset(spec, seed=seed)
        except BaseException:
            await self.close(sid)
            raise
        return session, observation

    async def ensure(self, session_id: str, spec: WorldSpec | None = None, seed: int = 0) -> None:
        """Open ``session_id`` unless it is open (transports whose sessions are named by the client)."""
        if session_id not in self._sessions:
            await self.create(spec, seed, session_id=session_id)

    def get(self, session_id: str) -> Session:
        """The open session ``session_id`` (expired ones are dropped first).

        Raises:
            SessionNotFound: no such open session.
        """
        session = self._sessions.get(session_id)
        if session is not None and session.busy == 0 and self._expired(session):
            self._drop(session_id)
            session = None
        if session is None:
            raise SessionNotFound(f"no open session {session_id!r} (never created, closed, or expired "
                                  f"after {self.idle_timeout_s:g} s idle: --idle-timeout-s)")
        return session

    @contextlib.asynccontextmanager
    async def use(self, session_id: str) -> AsyncIterator[Session]:
        """Hold ``session_id`` exclusively: wait for its lock, mark it used, keep it from expiring."""
        session = self.get(session_id)
        session.busy += 1
        try:
            async with session.lock:
                if self._sessions.get(session_id) is not session:
                    raise SessionNotFound(f"session {session_id!r} was closed while waiting")
                yield session
        finally:
            session.busy -= 1
            session.last_used = self._clock()

    async def close(self, session_id: str) -> None:
        """Close a session and its simulator.

        Raises:
            SessionNotFound: no such open session.
        """
        session = self._sessions.pop(session_id, None)
        if session is None:
            raise SessionNotFound(f"no open session {session_id!r}")
        await self._aclose(session)

    async def release(self, session_id: str) -> None:
        """Close ``session_id`` if it is open (its owner went away; closing twice is fine)."""
        with contextlib.suppress(SessionNotFound):
            await self.close(session_id)

    async def expire_idle(self) -> list[str]:
        """Close every session idle longer than ``idle_timeout_s``; return their ids."""
        return self._expire_now()

    def _expire_now(self) -> list[str]:
        expired = [sid for sid, s in self._sessions.items() if s.busy == 0 and self._expired(s)]
        for sid in expired:
            self._drop(sid)
        return expired

    async def aclose_all(self) -> None:
        """Close every session (server shutdown)."""
        for sid in list(self._sessions):
            with contextlib.suppress(SessionNotFound):
                await self.close(sid)

    def reaping(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Run :meth:`run_reaper` in the background for the duration of the block (a server's life)."""
        return in_background(self.run_reaper())

    async def run_reaper(self, interval_s: float | None = None) -> None:
        """Expire idle sessions periodically until cancelled (so memory is freed without traffic)."""
        interval = interval_s or reap_interval(self.idle_timeout_s)
        while True:
            await asyncio.sleep(interval)
            expired = await self.expire_idle()
            if expired:
                log.info("expired %d idle session(s)", len(expired))

    def _expired(self, session: Session) -> bool:
        return self._clock() - session.last_used > self.idle_timeout_s

    def _drop(self, session_id: str) -> None:
        """Forget a session and close its simulator in the background (expiry never blocks a request)."""
        session = self._sessions.pop(session_id, None)
        if session is not None:
            task = asyncio.get_running_loop().create_task(self._aclose(session))
            _BACKGROUND.add(task)
            task.add_done_callback(_BACKGROUND.discard)

    @staticmethod
    async def _aclose(session: Session) -> None:
        try:
            await session.simulator.aclose()
        except Exception:  # a failing close must not break the server or hide other sessions
            log.exception("closing session %s failed", session.id)


_BACKGROUND: set[asyncio.Task[None]] = set()
"""Strong references to background close tasks (asyncio keeps only weak ones)."""


def reap_interval(idle_timeout_s: float) -> float:
    """How often to look for idle sessions: twice per timeout, between 50 ms and 30 s."""
    return max(0.05, min(idle_timeout_s / 2, 30.0))


@contextlib.asynccontextmanager
async def in_background(work: Coroutine[Any, Any, None]) -> AsyncIterator[None]:
    """Run ``work`` as a task for the duration of the block; cancel and await it on the way out."""
    task = asyncio.get_running_loop().create_task(work)
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

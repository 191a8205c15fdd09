"""``Simulator``: one episode of a simulated environment, stepped by an agent (docs/SIMULATOR.md).

Why the framework does more than forward actions to a model: long rollouts fail on consistency
and implicit faults, so each step validates the call first, draws faults from seeded rules,
checks the model's answer against a state ledger (re-asking, then repairing), may route to a
real environment, and labels every observation with where it came from (REFERENCE §6).
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol

from agentworld.domains.failures import is_error
from agentworld.domains.hooks import ParsedAction, RawAction, domain_actions, fault_template
from agentworld.domains.registry import DOMAINS, DomainRegistry
from agentworld.errors import AgentWorldError, BackendError
from agentworld.models.base import ChatBackend, ChatRequest
from agentworld.models.cache import ResponseCache
from agentworld.models.parsing import parse_prediction
from agentworld.schema import OBSERVATION_MARKER, Message, strip_marker
from agentworld.sim import controls
from agentworld.sim.cache import CallTally, complete
from agentworld.sim.fork import ForkRouter, copy_ledger
from agentworld.sim.history import (
    ActionError,
    TokenCounter,
    build_messages,
    conflicts_message,
    estimate_tokens,
    omitted_turns,
    system_prompt,
)
from agentworld.sim.ledger import Ledger, NullLedger, make_ledger
from agentworld.sim.types import (
    FaultRule,
    InjectedFault,
    SessionState,
    Source,
    StepResult,
    TurnRecord,
    WorldSpec,
)

__all__ = ["ActionError", "Router", "Simulator"]


class Router(Protocol):
    """Decides per action whether a real environment answers (``"real"``) or the model (``"model"``).

    ``action`` is the action's text as the episode's history (and an AgentWorldBench row) holds it;
    :meth:`execute` returns the real observation text. :class:`agentworld.sim.router.Router` is the
    one that runs a domain's real environment.
    """

    def route(self, domain: str, action: str) -> str: ...

    async def execute(self, action: str) -> str: ...


_make_ledger = make_ledger
"""The ledger factory :meth:`Simulator.areset` calls (looked up here so that tests can replace it)."""


class Simulator:
    """A simulated environment episode: ``reset`` then ``step``/``astep`` (see docs/SIMULATOR.md).

    Args:
        model: the world model; ``None`` serves only templates, faults and a router's real results.
        ledger: keep a state ledger (``sim.ledger.make_ledger``) to check and repair answers.
        cache: response cache shared by choice (``None``: no caching).
        max_reasks: times the model is asked again when its answer contradicts the ledger.
        router: sends some actions to a real environment.
        domains: domain registry (default: the built-in one).
        token_counter: counts tokens of history text (default: ``len // 4``).
        ledger_factory: makes each episode's ledger from its spec (default: the domain's own); a
            fictional world passes the ledger of its bible here.

    The caller owns ``model`` and ``cache``; :meth:`close` closes neither.
    """

    def __init__(self, model: ChatBackend | None = None, *, ledger: bool = True,
                 cache: ResponseCache | None = None, max_reasks: int = 1, router: Router | None = None,
                 domains: DomainRegistry | None = None, token_counter: TokenCounter | None = None,
                 ledger_factory: Callable[[WorldSpec], Ledger] | None = None) -> None:
        self.model = model
        self.cache = cache
        self.router = router
        self.max_reasks = max(0, max_reasks)
        self._use_ledger = ledger
        self._ledger_factory = ledger_factory
        self._domains = domains or DOMAINS
        self._count = token_counter or estimate_tokens
        self._loop: asyncio.AbstractEventLoop | None = None
        self._spec, self._started = WorldSpec(), False
        self._seed = 0


    async def areset(self, spec: WorldSpec | None = None, *, seed: int = 0) -> str:
        """Start a new episode and return its initial observation."""
        spec = spec or WorldSpec()
        domain, validator = self._domains[spec.domain], controls.ToolValidator(spec.tools)
        self._spec, self._seed, self._domain, self._validator = spec, seed, domain, validator
        self._actions = domain_actions(spec.domain)
        self._started = True
        self._faults_in = controls.FaultInjector(spec.controls, seed)
        factory = self._ledger_factory or (lambda s: _make_ledger(s.domain, s))
        self._ledger: Ledger = factory(spec) if self._use_ledger else NullLedger()
        self._history: list[TurnRecord] = []
        self._faults: list[InjectedFault] = []
        self._pages: dict[tuple[str | None, str], tuple[str, int]] = {}
        self._seen: dict[str, list[tuple[int, str]]] = {}
        self._initial = self._actions.initial_observation(spec, seed)
        reset_router = getattr(self.router, "reset", None)
        if callable(reset_router):
            reset_router(seed)
        return self._initial

    def fork(self, *, seed: int | None = None) -> Simulator:
        """An independent copy of the episode, for imagining actions without touching this one.

        The copy has its own history, ledger, fault draws, stored pages and replay memory; it
        shares the model and the cache (a fork's answers are cached like the episode's). Its
        router is a :class:`~agentworld.sim.fork.ForkRouter`: it never runs the real environment.
        ``seed`` (default: the episode's) is the seed of the fork's model requests, so that a
        planner's samples of one action draw different answers (and are cached apart).
        """
        if not self._started:
            raise AgentWorldError("Simulator.fork() before reset(): no episode to fork")
        child = Simulator(self.model, ledger=self._use_ledger, cache=self.cache, max_reasks=self.max_reasks,
                          router=ForkRouter(self.router), domains=self._domains, token_counter=self._count,
                          ledger_factory=self._ledger_factory)
        child._spec, child._domain, child._validator = self._spec, self._domain, self._validator
        child._seed = self._seed if seed is None else seed
        child._actions, child._initial, child._started = self._actions, self._initial, True
        child._faults_in = copy.deepcopy(self._faults_in)
        child._ledger = copy_ledger(self._ledger)
        child._history, child._faults = list(self._history), list(self._faults)
        child._pages = dict(self._pages)
        child._seen = {key: list(turns) for key, turns in self._seen.items()}
        return child

    def reset(self, spec: WorldSpec | None = None, *, seed: int = 0) -> str:
        return self._run(self.areset(spec, seed=seed), "reset", "areset")

    def step(self, action: RawAction) -> StepResult:
        """Synchronous :meth:`astep` on the simulator's own event loop (not inside a running loop)."""
        return self._run(self.astep(action), "step", "astep")

    async def astep(self, action: RawAction) -> StepResult:
        """Take one action and return what the environment shows (see the module docstring)."""
        if not self._started:
            raise AgentWorldError("Simulator.step() before reset(): call reset(spec, seed=...) first")
        parsed = self._actions.parse(action)
        first = self._initial if self._actions.initial_in_action and not self._history else None
        text = self._actions.render(parsed, first)
        turn = len(self._history) + 1
        result = await self._shortcut(parsed, turn)
        if result is None:
            fault = self._faults_in.decide(parsed.tool)
            if fault is not None and fault.kind in controls.ERROR_KINDS:
                result = await self._render_fault(fault, parsed, text, turn)
            elif fault is not None and fault.kind == "stale" and self._seen.get(parsed.key):
                earlier, obs = self._seen[parsed.key][-1]
                fault = fault.model_copy(update={"detail": {**fault.detail, "stale_from_turn": earlier}})
                result = StepResult(observation=obs, source="cache", turn=turn, fault=fault,
                                    meta={"stale": True, "stale_from_turn": earlier})
            else:
                result = await self._answer(parsed, text, turn, fault)
        self._record(parsed, text, result)
        return result


    async def _shortcut(self, parsed: ParsedAction, turn: int) -> StepResult | None:
        """Answers that need no decision: a stored later page, or an invalid MCP call's error."""
        cursor = (parsed.arguments or {}).get("cursor")
        stored = self._pages.get((parsed.tool, cursor)) if isinstance(cursor, str) else None
        if stored is not None:
            return StepResult(observation=stored[0], source="cache", turn=turn,
                              meta={"page": stored[1], "cursor": cursor})
        args = parsed.arguments
        error = None if args is None else await self._validator.acheck(parsed.tool or "", args)
        return None if error is None else StepResult(observation=error, source="template", turn=turn,
                                                     is_error=True)

    async def _render_fault(self, fault: InjectedFault, parsed: ParsedAction, text: str,
                            turn: int) -> StepResult:
        screens = [self._initial, *(record.observation for record in self._history)]
        template = fault_template(self._spec.domain, fault, parsed, screens)
        if self.model is None:
            return StepResult(observation=template, source="template", turn=turn, fault=fault, is_error=True)
        calls = CallTally()
        extra = [Message(role="user", content=controls.fault_request(fault, self._spec.domain))]
        obs = await self._ask(self._messages(text, extra), calls)
        if not controls.shows_fault(fault, obs):
            return StepResult(observation=template, source="template", turn=turn, fault=fault, is_error=True,
                              meta={"fault_render": "the model's rendering did not show the failure"},
                              **calls.fields())
        source: Source = "cache" if calls.all_cached else "fault"
        return StepResult(observation=obs, source=source, turn=turn, fault=fault, is_error=True,
                          **calls.fields())

    async def _answer(self, parsed: ParsedAction, text: str, turn: int,
                      fault: InjectedFault | None) -> StepResult:
        calls, meta = CallTally(), {}
        source: Source = "world_model"
        obs: str | None = None
        contradictions: list[str] = []
        repaired = False
        if self.router is not None and self.router.route(self._spec.domain, text) == "real":
            try:
                obs, source = strip_marker(await self.router.execute(text)).rstrip(), "real"
            except Exception as exc:  # the model can still answer; say what happened
                if self.model is None:
                    raise
                meta["router_error"] = f"{type(exc).__name__}: {exc}"
        if obs is None:
            if self.model is None:
                raise BackendError(f"no world model and no real environment for this {self._spec.domain} "
                                   "action (pass a model, or a router that routes it to 'real')")
            obs, contradictions, repaired = await self._checked(text, calls)
            source = "cache" if calls.all_cached else "world_model"
        self._ledger.update(text, obs)
        shown = obs
        if fault is not None:
            def cursor(k: int) -> str:
                return hashlib.sha256(f"{self._seed}:{turn}:{k}".encode()).hexdigest()[:12]

            shown, extra, later = controls.transform(fault, obs, cursor)
            if shown == obs:  # drawn, but it would change nothing the agent sees: not an injected fault
                meta["fault_without_effect"] = fault.kind
                fault = None
            else:
                stored = {(parsed.tool, cursor(k)): (page, k + 1) for k, page in enumerate(later, 1)}
                self._pages.update(stored)
                fault = fault.model_copy(update={"detail": {**fault.detail, **extra}})
                meta.update(extra)
        return StepResult(observation=shown, source=source, turn=turn, fault=fault, repaired=repaired,
                          contradictions=contradictions, meta=meta,
                          is_error=is_error(shown, self._spec.domain), **calls.fields())

    async def _checked(self, text: str, calls: CallTally) -> tuple[str, list[str], bool]:
        """Model answer → ledger check → re-ask with the conflicts named → deterministic repair."""
        messages = self._messages(text)
        first = final = await self._ask(messages, calls)
        found = list(self._ledger.check(text, first))
        contradictions = [str(getattr(c, "message", c)) for c in found]
        for _ in range(self.max_reasks if found else 0):
            tag = self._domain.response_tag
            extra = [Message(role="assistant", content=f"<{tag}>\n{OBSERVATION_MARKER}\n{final}\n</{tag}>"),
                     Message(role="user", content=conflicts_message(found))]
            final = await self._ask(messages + extra, calls)
            found = list(self._ledger.check(text, final))
            if not found:
                break
        if found:
            fixed = self._ledger.repair(text, final, found)
            final = fixed if fixed is not None else final
        return final, contradictions, final != first

    async def _ask(self, messages: list[Message], calls: CallTally) -> str:
        """One model call through the cache; returns the observation without tags and marker."""
        assert self.model is not None
        request = ChatRequest(messages=tuple(messages), max_tokens=self._spec.max_tokens,
                              temperature=self._spec.temperature, seed=self._seed)
        result = await complete(self.model, self.cache, request, calls)
        return strip_marker(parse_prediction(result.content, self._domain.response_tag)).rstrip()

    def _messages(self, current: str, extra: Sequence[Message] = ()) -> list[Message]:
        omitted = omitted_turns(self._history, self._spec.history_budget_tokens, self._count)
        restate = self._initial if self._actions.initial_in_action and omitted else None
        system = system_prompt(self._spec, self._domain, ledger=self._ledger.summary(), omitted=omitted,
                               initial_state=restate, actions=self._actions)
        return build_messages(system, self._history[omitted:], current, extra)

    def _record(self, parsed: ParsedAction, text: str, result: StepResult) -> None:
        self._history.append(TurnRecord(action=text, observation=result.observation, source=result.source))
        if result.fault is not None:
            self._faults.append(result.fault)
        if not result.is_error:
            self._seen.setdefault(parsed.key, []).append((result.turn, result.observation))


    def state(self) -> SessionState:
        if not self._started:
            raise AgentWorldError("Simulator.state() before reset(): no episode yet")
        return SessionState(spec=self._spec, seed=self._seed, turn=len(self._history),
                            history=list(self._history), ledger=self._ledger.summary(),
                            faults=list(self._faults))

    def idle_fault_rules(self) -> list[FaultRule]:
        """The episode's fault rules that no call so far was eligible for (no tool they apply to)."""
        return self._faults_in.idle_rules() if self._started else []

    @property
    def history(self) -> list[TurnRecord]:
        return list(self._history) if self._started else []

    def _run(self, coro: Coroutine[Any, Any, Any], name: str, async_name: str) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            coro.close()
            raise RuntimeError(f"Simulator.{name}() cannot run inside a running event loop; "
                               f"use `await sim.{async_name}(...)` there")
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)

    async def aclose(self) -> None:
        """End the episode's resources (the model and the cache belong to the caller)."""
        self._started = False

    def close(self) -> None:
        """Close the private event loop used by the sync API."""
        self._started = False
        if self._loop is not None and not self._loop.is_closed():
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()
        self._loop = None

    def __enter__(self) -> Simulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""The real web environment: Chromium on the local sites, driven and observed the BrowserGym way.

Actions and observations are the row texts (:mod:`agentworld.domains.web.actions`); the site is
served on a free loopback port, but every text shows it as :data:`CANONICAL_ORIGIN`, so recordings do
not depend on the port (and ``goto`` to the canonical origin reaches the real one).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from agentworld.domains.web.actions import CANONICAL_ORIGIN, web_call
from agentworld.domains.web.site import ShopState, build_app, miniwob_dir
from agentworld.envs.browser import BrowserSession, rewrite_origins
from agentworld.envs.loopback import LoopbackServer
from agentworld.errors import AgentWorldError

MINIWOB_PREFIX = "miniwob/"
T = TypeVar("T")
MINIWOB_MAX_TIME_MS = 1_000_000_000
_MINIWOB_SETUP = """([seed, maxTime]) => {
  Math.seedrandom(seed);
  core.EPISODE_MAX_TIME = maxTime;
  for (const name of ['createDisplay', 'reloadDisplay', 'updateDisplay', 'countdownTimer', 'clearTimer',
                      'canvasDrawClick', 'canvasClear']) { core[name] = function () {}; }
  for (const id of ['reward-display', 'click-canvas']) {
    const e = document.getElementById(id);
    if (e) e.remove();
  }
  core.startEpisodeReal();
}"""
"""Seed the task's generator and take out the time-dependent parts (countdown, reward display), as
BrowserGym's MiniWoB tasks do; what is left depends on the seed and the actions only."""


@dataclass
class WebSite:
    """The local site (shop + MiniWoB++) on a loopback port; :meth:`reset` empties the shop."""

    state: ShopState = field(default_factory=ShopState)
    server: LoopbackServer | None = None

    def start(self) -> str:
        self.server = LoopbackServer(build_app(self.state, miniwob_dir()))
        return self.server.start()

    @property
    def origin(self) -> str:
        return self.server.origin if self.server else ""

    def reset(self) -> None:
        fresh = ShopState()
        for f in fields(ShopState):
            setattr(self.state, f.name, getattr(fresh, f.name))

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


def start_path(start: str) -> str:
    """``miniwob/<task>`` → the task's page; a path (``/``, ``/catalog``) stays as it is."""
    if start.startswith(MINIWOB_PREFIX):
        task = start[len(MINIWOB_PREFIX):]
        if not task.replace("-", "").isalnum():
            raise AgentWorldError(f"bad MiniWoB task name {task!r}")
        if miniwob_dir() is None:
            raise AgentWorldError("MiniWoB++ pages need the miniwob package: pip install 'agentworld[web]'")
        return f"/wob/miniwob/{task}.html"
    if not start.startswith("/"):
        raise AgentWorldError(f"start must be a path on the local site (/...) or miniwob/<task>, not "
                              f"{start!r}")
    return start


class WebEnvironment:
    """One episode in a browser on the local site (a :class:`~agentworld.domains.base.RealEnvironment`).

    Args:
        seed: seeds MiniWoB++'s task generator (the shop has no randomness).
        start: the first page: a path on the shop (``/``) or ``miniwob/<task>``.
        browser, site: shared ones (a recorder reuses one browser for many episodes); by default the
            environment starts its own and closes them in :meth:`close`.

    Playwright's synchronous API works only on the thread that started it, and the sim-to-real router
    steps environments from worker threads: an environment that owns its browser runs every browser
    call on one thread of its own, whichever thread calls it.
    """

    def __init__(self, *, seed: int = 0, start: str = "/", browser: BrowserSession | None = None,
                 site: WebSite | None = None) -> None:
        self.seed = seed
        self.path = start_path(start)
        self._own_site = site is None
        self._own_browser = browser is None
        self.site = site or WebSite()
        self.browser: BrowserSession | None = browser
        self._observation: str | None = None
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="web-browser") if self._own_browser else None
        try:
            self._call(self._open)
        except BaseException:
            self.close()
            raise

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        return self._worker.submit(fn, *args).result() if self._worker is not None else fn(*args)

    def _open(self) -> None:
        if self._own_site:
            self.site.start()
        else:
            self.site.reset()
        if self.browser is None:
            self.browser = BrowserSession(allowed_origins=(self.site.origin,))
            self.browser.start()
        else:
            self.browser.allowed_origins = (self.site.origin,)
            self.browser.new_context()

    def _pairs(self) -> list[tuple[str, str]]:
        return [(self.site.origin, CANONICAL_ORIGIN)]

    def _render(self, error: str = "") -> str:
        assert self.browser is not None
        return rewrite_origins(self.browser.observe(error).render(), self._pairs())

    def initial_observation(self) -> str:
        """Open the start page (set up the MiniWoB++ task with the seed) and return what it shows."""
        return self._call(self._initial)

    def _initial(self) -> str:
        if self._observation is None:
            assert self.browser is not None
            page = self.browser.page
            page.goto(self.site.origin + self.path)
            if self.path.startswith("/wob/miniwob/"):
                page.evaluate(_MINIWOB_SETUP, [str(self.seed), MINIWOB_MAX_TIME_MS])
            self._observation = self._render()
        return self._observation

    def step(self, action: str) -> str:
        """Run the action text's BrowserGym call; the page after it (with ``Error: …`` if it failed)."""
        if self.browser is None:
            raise AgentWorldError("the web environment is closed")
        return self._call(self._step, action)

    def _step(self, action: str) -> str:
        assert self.browser is not None
        self._initial()
        call = rewrite_origins(web_call(action), [(CANONICAL_ORIGIN, self.site.origin)])
        self._observation = self._render(self.browser.act(call))
        return self._observation

    @property
    def blocked(self) -> list[str]:
        """Requests to other hosts that were stopped, in order."""
        return list(self.browser.blocked) if self.browser else []

    def close(self) -> None:
        """Close what this environment started (idempotent)."""
        if self._own_browser and self.browser is not None:
            self._call(self.browser.close)
        self.browser = None
        if self._own_site:
            self.site.stop()
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None

    def __enter__(self) -> WebEnvironment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_environment(seed: int = 0, **options: Any) -> WebEnvironment:
    """The plugin's factory: ``start`` (default ``/``) picks the first page."""
    unknown = set(options) - {"start"}
    if unknown:
        raise AgentWorldError(f"unknown web environment option(s): {', '.join(sorted(unknown))} "
                              "(known: start)")
    return WebEnvironment(seed=seed, start=str(options.get("start", "/")))


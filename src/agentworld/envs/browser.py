"""A headless Chromium driven through BrowserGym's action space and observed as its accessibility tree.

Why: a web world model is scored against what a real browser shows after a real action. Actions are
BrowserGym's high-level calls (``click('12')``, ``fill('7', 'Bob')``, ``goto(url)`` …, the 21 of the
official web prompt), parsed and executed by ``browsergym.core.action.highlevel.HighLevelActionSet``
(strict: one call, literal arguments only — the text is never evaluated as Python). Observations are
BrowserGym's own extraction (bids marked on the DOM, the merged accessibility tree, the DOM snapshot's
extra properties) rendered by ``browsergym.utils.obs.flatten_axtree_to_str``.

We drive these pieces on our own Playwright page instead of ``browsergym.core.env.BrowserEnv``:
its chat window launches a second browser without ``executable_path`` and so needs Playwright's own
browser download, which cannot be fetched offline. Here the OS package's ``chromium`` runs alone.

Network: only the origins given are reachable. Every other request is aborted by route interception
(recorded in :attr:`BrowserSession.blocked`), and Chromium's own resolver maps every host name but
loopback to "not found", so nothing the browser does itself (prefetch, updates) leaves the machine.
Route interception never sees the browser's own pages (``chrome://version`` shows Chromium's command
line and temp paths, which would land in recordings), so a ``goto`` may only open ``about:blank`` or
an http(s) page of an allowed origin; any other target answers as a blocked request does.

Cleanup: Playwright's driver process closes its browsers and removes their profile folders when its
parent goes away, SIGKILL included (its stdin closes). Chromium's own temporary folder (its process
singleton's socket) and its crash database would survive a SIGKILL, and its crash handler leaves the
process tree; so Chromium gets a private ``TMPDIR`` and ``HOME`` and the tag of a
:class:`~agentworld.envs.janitor.Janitor`, which kills what is left of it and removes the folder once
this process is gone, however it ended. :meth:`BrowserSession.close` does all of this politely and
is idempotent.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agentworld.envs.janitor import Janitor
from agentworld.errors import AgentWorldError

OFFICIAL_ACTIONS: tuple[str, ...] = (
    "noop", "mouse_move", "mouse_click", "mouse_dblclick", "mouse_down", "mouse_up", "scroll", "click",
    "keyboard_press", "keyboard_type", "fill", "hover", "tab_focus", "new_tab", "go_back", "go_forward",
    "goto", "tab_close", "select_option", "send_msg_to_user", "report_infeasible")
"""The action space of the official web prompt, in its order (BrowserGym function names)."""
READING_ACTIONS: frozenset[str] = frozenset({"noop", "scroll", "hover", "mouse_move", "send_msg_to_user",
                                             "report_infeasible"})
"""Actions that read or move the viewport but cannot change a site's state."""
LAUNCH_ATTEMPTS = 3
"""Starts of Chromium tried before giving up (see :meth:`BrowserSession._launch`)."""
CHROMIUM_ARGS: tuple[str, ...] = (
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-domain-reliability", "--no-pings", "--disable-features=OverlayScrollbars,Translate,"
    "OptimizationHints,MediaRouter,DialMediaRouteProvider", "--no-sandbox")
"""Hardening: no DNS but loopback, no background traffic. ``--no-sandbox``: CI runs as root."""
IGNORED_ROLES: tuple[str, ...] = ("InlineTextBox",)
"""Newer Chromium lists every text run twice (StaticText and InlineTextBox): the second is dropped."""
_ACTIVATION_SCRIPT = ("for (const e of ['focus', 'load', 'pageshow', 'mousedown', 'keydown']) "
                      "window.addEventListener(e, () => window.browsergym_page_activated(), "
                      "{capture: true});")
"""BrowserGym's trick to know the active tab (Playwright has no such notion): pages report themselves."""
_CALL_RE = re.compile(r"^\s*([A-Za-z_]\w*)\s*\(")


class BrowserError(AgentWorldError):
    """The browser could not be found or started."""


def find_chromium() -> str:
    """The Chromium to drive: ``$AGENTWORLD_CHROMIUM``, else ``chromium``/``chromium-browser`` on PATH.

    Raises:
        BrowserError: with the install command when none is found.
    """
    configured = os.environ.get("AGENTWORLD_CHROMIUM")
    if configured:
        if not os.access(configured, os.X_OK):
            raise BrowserError(f"AGENTWORLD_CHROMIUM={configured} is not an executable file")
        return configured
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise BrowserError("no Chromium found: install the OS package (apt-get install chromium) or set "
                       "AGENTWORLD_CHROMIUM to a Chromium executable")


def action_name(action: str) -> str | None:
    """The function an action calls (``click`` for ``click('12')``), or None if it is no call."""
    m = _CALL_RE.match(action)
    return m.group(1) if m else None


def action_set() -> Any:
    """BrowserGym's parser/executor restricted to the official action space (strict, one call)."""
    from browsergym.core.action import functions
    from browsergym.core.action.highlevel import HighLevelActionSet

    actions = [getattr(functions, n) for n in OFFICIAL_ACTIONS]
    return HighLevelActionSet(subsets=["custom"], custom_actions=actions,
                              strict=True, multiaction=False)


@dataclass(frozen=True)
class PageState:
    """What the agent sees: open tabs (titles), the active one, its URL and accessibility tree."""

    tabs: tuple[str, ...]
    active: int
    url: str
    tree: str
    error: str = ""

    def render(self) -> str:
        """The observation text: ``Tab i (current): title`` lines, ``URL: …``, a blank line, the tree."""
        head = [f"Tab {i}{' (current)' if i == self.active else ''}: {t}" for i, t in enumerate(self.tabs)]
        lines = [*head, f"URL: {self.url}"]
        if self.error:
            lines.append(f"Error: {self.error}")
        return "\n".join(lines) + "\n\n" + self.tree


def _short_error(exc: BaseException) -> str:
    """First line of an action's error, without Playwright's call log (it holds timings)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = re.sub(r"Timeout \d+ms exceeded", "Timeout exceeded", text)
    return f"{type(exc).__name__}: {text}".rstrip(": ")


@dataclass
class BrowserSession:
    """One Chromium with one browsing context; :meth:`new_context` starts a fresh one (new episode).

    Args:
        allowed_origins: scheme://host:port prefixes the pages may load; everything else is aborted.
        viewport: page size in CSS pixels (fixed, so layouts and scrolling repeat).
        timeout_ms: how long one action may wait for its element or navigation. BrowserGym gives each
            element action 500 ms; on a loaded machine a click that starts a navigation overruns that
            and reports a timeout although it worked, so recordings would depend on the load.
        settle_s: pause after an action for scripts and layout to settle before observing.
    """

    allowed_origins: tuple[str, ...]
    viewport: tuple[int, int] = (1280, 720)
    timeout_ms: int = 5000
    settle_s: float = 0.15
    blocked: list[str] = field(default_factory=list)
    _pw: Any = None
    _browser: Any = None
    _context: Any = None
    page: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _tmp: str | None = None
    _janitor: Janitor | None = None

    def __enter__(self) -> BrowserSession:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start Playwright's driver and Chromium, then a first context."""
        from playwright.sync_api import sync_playwright

        executable = find_chromium()
        self._tmp = tempfile.mkdtemp(prefix="agentworld-browser-", dir=_short_temp())
        self._janitor = Janitor()
        self._janitor.track(self._tmp)
        with _environment({"TMPDIR": self._tmp, **self._janitor.env}):
            self._pw = sync_playwright().start()  # its driver makes Chromium's profile folder in TMPDIR
        try:
            from browsergym.core.constants import BROWSERGYM_ID_ATTRIBUTE

            self._pw.selectors.set_test_id_attribute(BROWSERGYM_ID_ATTRIBUTE)
            env = {**os.environ, "TMPDIR": self._tmp, "HOME": self._tmp,  # crash reports land here too
                   "XDG_CONFIG_HOME": f"{self._tmp}/config", "XDG_CACHE_HOME": f"{self._tmp}/cache",
                   **self._janitor.env}
            self._browser = self._launch(executable, env)
        except Exception as exc:
            self.close()
            raise BrowserError(f"could not start {executable}: {_short_error(exc)}") from exc
        self.new_context()

    def _launch(self, executable: str, env: dict[str, str]) -> Any:
        """Chromium, retried: on a loaded machine it now and then dies while starting (Playwright's
        ``TargetClosedError``), and a second start then works."""
        for attempt in range(LAUNCH_ATTEMPTS):
            try:
                return self._pw.chromium.launch(executable_path=executable, headless=True,
                                                args=list(CHROMIUM_ARGS), env=env)
            except Exception:
                if attempt == LAUNCH_ATTEMPTS - 1:
                    raise
                time.sleep(0.5 * (attempt + 1))
        raise AssertionError("unreachable")

    def new_context(self) -> None:
        """A fresh browsing context (no cookies, storage or history) with one blank page."""
        if self._context is not None:
            with contextlib.suppress(Exception):
                self._context.close()
        width, height = self.viewport
        self._context = self._browser.new_context(viewport={"width": width, "height": height}, locale="en-US",
                                                  timezone_id="UTC", service_workers="block")
        self._context.set_default_timeout(self.timeout_ms)
        self._context.route("**/*", self._route)
        self._context.expose_binding("browsergym_page_activated",
                                     lambda source: self._activate(source["page"]))
        self._context.add_init_script(_ACTIVATION_SCRIPT)
        self.page = self._context.new_page()

    def allowed(self, url: str) -> bool:
        """Whether a page may load ``url`` (one of the allowed origins, or an inline document)."""
        if url.startswith(("data:", "about:", "blob:")):
            return True
        return any(url == o or url.startswith(o.rstrip("/") + "/") for o in self.allowed_origins)

    def navigable(self, url: str) -> bool:
        """Whether a tab may be sent to ``url``: ``about:blank`` or an http(s) page of an allowed origin."""
        if url == "about:blank":
            return True
        return url.split(":", 1)[0] in ("http", "https") and self.allowed(url)

    def _route(self, route: Any) -> None:
        url = route.request.url
        if self.allowed(url):
            route.continue_()
        else:
            with self._lock:
                self.blocked.append(url)
            route.abort("blockedbyclient")

    def _activate(self, page: Any) -> None:
        if page.context == self._context:
            self.page = page

    def act(self, action: str) -> str:
        """Run one BrowserGym action on the active page; the error text, or "" when it worked."""
        from browsergym.core.action.base import execute_python_code

        try:
            code = action_set().to_python_code(action)
        except Exception as exc:
            return _short_error(exc)
        refused = [url for url in goto_targets(action) if not self.navigable(url)]
        if refused:
            with self._lock:
                self.blocked.extend(refused)
            return f"Error: net::ERR_BLOCKED_BY_CLIENT at {refused[0]}"
        code = code.replace("timeout=500)", f"timeout={self.timeout_ms})")
        messages: list[str] = []
        error = ""
        try:
            execute_python_code(code, self.page, send_message_to_user=messages.append,
                                report_infeasible_instructions=messages.append)
        except Exception as exc:
            error = _short_error(exc)
        self._settle()
        return error

    def _settle(self) -> None:
        time.sleep(self.settle_s)
        with contextlib.suppress(Exception):
            self._context.cookies()  # runs Playwright callbacks waiting on the stack (the page activation)
        pages = list(self._context.pages)
        if not pages:
            self.page = self._context.new_page()
        elif self.page not in pages or self.page.is_closed():
            self.page = pages[-1]
        for page in self._context.pages:
            with contextlib.suppress(Exception):
                page.wait_for_load_state("domcontentloaded", timeout=self.timeout_ms)

    def observe(self, error: str = "") -> PageState:
        """BrowserGym's accessibility tree of the active page, with its bids, and the open tabs."""
        from browsergym.core.observation import (
            MarkingError,
            _post_extract,
            _pre_extract,
            extract_dom_extra_properties,
            extract_dom_snapshot,
            extract_merged_axtree,
        )
        from browsergym.utils.obs import IGNORED_AXTREE_ROLES, flatten_axtree_to_str
        from playwright.sync_api import Error as PlaywrightError

        page = self.page
        for attempt in range(3):
            try:
                _pre_extract(page, tags_to_mark="standard_html", lenient=attempt == 2)
                axtree = extract_merged_axtree(page)
                extra = extract_dom_extra_properties(extract_dom_snapshot(page), scale_factor=1.0)
                break
            except (PlaywrightError, MarkingError):
                with contextlib.suppress(Exception):
                    _post_extract(page)
                if attempt == 2:
                    raise
                time.sleep(0.3)
        _post_extract(page)
        tree = flatten_axtree_to_str(axtree, extra_properties=extra,
                                     ignored_roles=[*IGNORED_AXTREE_ROLES, *IGNORED_ROLES])
        pages = list(self._context.pages)
        return PageState(tabs=tuple(_title(p) for p in pages), active=pages.index(page), url=page.url,
                         tree=tree.rstrip(), error=error)

    def close(self) -> None:
        """Close the context, the browser and the driver (idempotent; errors of a dead browser ignored)."""
        for closer in (self._context, self._browser):
            if closer is not None:
                with contextlib.suppress(Exception):
                    closer.close()
        if self._pw is not None:
            with contextlib.suppress(Exception):
                self._pw.stop()
        self._context = self._browser = self._pw = self.page = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        if self._janitor is not None:
            self._janitor.close()
            self._janitor = None


def goto_targets(action: str) -> list[str]:
    """The literal URLs ``goto`` calls in ``action`` name (none when it does not parse).

    >>> goto_targets("goto('chrome://version')")
    ['chrome://version']
    """
    try:
        tree = ast.parse(action.strip())
    except (SyntaxError, ValueError):
        return []
    urls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "goto":
            values = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "url")]
            urls += [v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    return urls


def _title(page: Any) -> str:
    try:
        return str(page.title())
    except Exception:
        return ""


def rewrite_origins(text: str, pairs: Iterable[tuple[str, str]]) -> str:
    """Replace each ``old`` origin by ``new`` in ``text`` (real loopback ports ↔ stable ones)."""
    for old, new in pairs:
        if old != new:
            text = text.replace(old, new)
    return text


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Any:
    """Set environment variables for the block (for a child process that takes only ``os.environ``).

    Why: Playwright starts its driver with this process's environment, and the driver creates each
    browser's profile and artifacts folders in its own TMPDIR; a recorder killed with SIGKILL left
    them in the user's temp folder (a flaky CI failure). With TMPDIR inside the janitor's folder,
    and the janitor's tag, the driver and its folders go with the rest.
    """
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


MAX_TEMP_PATH = 40
"""Longest temp folder Chromium's own folder may sit in (see :func:`_short_temp`)."""


def _short_temp() -> str:
    """The temp folder for Chromium's TMPDIR: the user's, or ``/tmp`` when the user's is long.

    Why: Chromium puts its singleton socket at ``$TMPDIR/.org.chromium.Chromium.XXXXXX/
    SingletonSocket``, and a Unix socket path holds at most 107 bytes; under a TMPDIR of 57
    characters (pytest's ``/tmp/pytest-of-root/pytest-1000/test_…/tmp``) plus this module's
    ``agentworld-browser-…`` folder every start failed with ``TargetClosedError``.
    """
    base = tempfile.gettempdir()
    return base if len(base) <= MAX_TEMP_PATH else "/tmp"

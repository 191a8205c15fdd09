"""``TerminalSession``: a real interactive bash in a tmux pane inside a :class:`Sandbox`.

Why tmux: Terminal-Bench agents act by sending keystrokes to a tmux pane and reading its screen,
so the same machinery gives observations of the same shape (prompt lines, ``^C``, REPL prompts,
programs waiting for input). The tmux server runs on the host with a private socket and in the
foreground as our child (``tmux -D``); it gets SIGKILL if this Python process dies
(``PR_SET_PDEATHSIG``), and the sandboxed bash dies with it (bwrap ``--die-with-parent``), so no
shell outlives the recorder, even after a crash.

Observation rule (see ``docs/CONTRACTS.md``): the screen from the line where the action started
to the end, history included. If the cursor line at the start was empty (a command is still
running), the observation starts at the last prompt line above it instead, so a plain wait after
a long command shows that command's line again, as the official examples do.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld.envs.procs import kill_sandbox_tree
from agentworld.envs.sandbox import (
    TMUX_PREFIX,
    Sandbox,
    SandboxConfig,
    SandboxError,
    SandboxTimeoutError,
)

MAX_DURATION_S = 60.0
POLL_S = 0.03
SETTLE_S = 0.2
NO_CHANGE_GRACE_S = 0.5

_KEY_NAMES = ("Enter|Escape|Tab|BTab|BSpace|Space|Up|Down|Left|Right|Home|End|PageUp|PageDown|PgUp|PgDn|"
              "PPage|NPage|IC|DC|Insert|Delete|F[1-9]|F1[0-2]|KP[0-9]|KPEnter")
KEY_NAME_RE = re.compile(rf"^(?:[CMS]-)*(?:{_KEY_NAMES})$|^(?:[CMS]-)+\S$")
"""Keystroke strings tmux treats as one named key (Terminal-Bench sends them without ``-l``)."""

REPL_PROMPTS = (">>>", "...")


def is_key_name(keystrokes: str) -> bool:
    """True when the whole keystroke string is a tmux key name such as ``C-c`` or ``Enter``."""
    return bool(KEY_NAME_RE.match(keystrokes))


def _set_pdeathsig() -> None:
    """In the child before exec: die with SIGKILL when the parent (this process) dies."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@dataclass(frozen=True)
class Screen:
    """One look at the pane: visible rows, cursor, history size and whether the shell exited."""

    rows: tuple[str, ...]
    cursor_x: int
    cursor_y: int
    history_size: int
    dead: bool

    @property
    def cursor_line(self) -> str:
        return self.rows[self.cursor_y] if 0 <= self.cursor_y < len(self.rows) else ""


def clean_screen(lines: Sequence[str]) -> str:
    """Strip trailing whitespace per line and drop trailing empty lines (the observation format)."""
    out = [line.rstrip() for line in lines]
    while out and not out[-1]:
        out.pop()
    return "\n".join(out)


def _cleanup(server: subprocess.Popen[bytes], socket: str, control_dir: str, pane: list[int]) -> None:
    """Finalizer: kill the sandbox, the tmux server and the private socket folder."""
    for pid in pane:
        kill_sandbox_tree(pid, wait_s=2.0)
    if server.poll() is None:
        with contextlib.suppress(Exception):
            subprocess.run(["tmux", "-S", socket, "kill-server"], capture_output=True, timeout=2)
        with contextlib.suppress(Exception):
            server.wait(timeout=2)
        if server.poll() is None:
            server.kill()
            server.wait()
    shutil.rmtree(control_dir, ignore_errors=True)


class TerminalSession:
    """A sandboxed interactive bash driven by Terminal-Bench keystroke actions.

    Args:
        config: sandbox limits; ignored when ``sandbox`` is given.
        seed: derives the hostname (container id) so recordings are reproducible.
        width: pane columns.
        height: pane rows.
        sandbox: run in this existing sandbox (e.g. after setup commands); the caller closes it.
        fast: return from a wait early once a bare shell/REPL prompt has been stable for a moment;
            a command still running at the end of its duration is still shown unfinished.
    """

    def __init__(self, config: SandboxConfig | None = None, *, seed: int | str | None = None,
                 width: int = 160, height: int = 40, sandbox: Sandbox | None = None,
                 fast: bool = True) -> None:
        if shutil.which("tmux") is None:
            raise SandboxError("terminal sessions need tmux on PATH (Debian/Ubuntu: apt-get install tmux)")
        self._owns_sandbox = sandbox is None
        self.sandbox = sandbox or Sandbox(config, seed=seed)
        self.config = self.sandbox.config
        self.width, self.height, self.fast = width, height, fast
        self.hostname = self.sandbox.hostname
        self._prompt_re = re.compile(rf"^[\w.-]+@{re.escape(self.hostname)}:.*?[#$]( |$)")
        self._control_dir = tempfile.mkdtemp(prefix=f"{TMUX_PREFIX}{os.getpid()}-")
        self._socket = str(Path(self._control_dir) / "tmux.sock")
        self._pane: list[int] = []
        self._expired = threading.Event()
        self._closed = False
        self._server = subprocess.Popen(["tmux", "-D", "-S", self._socket, "-f", "/dev/null"],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, env=self._tmux_env(),
                                        preexec_fn=_set_pdeathsig, start_new_session=True)
        self._finalizer = weakref.finalize(self, _cleanup, self._server, self._socket,
                                           self._control_dir, self._pane)
        self._timer: threading.Timer | None = None
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    # -- tmux plumbing ---------------------------------------------------------------------------

    @staticmethod
    def _tmux_env() -> Mapping[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TERM": "xterm", "LANG": "C.UTF-8"}

    def _tmux(self, *args: str, check: bool = True) -> str:
        proc = self._tmux_run(*args)
        if check and proc.returncode != 0:
            raise SandboxError(f"tmux {args[0]} failed: {proc.stderr.strip() or proc.returncode}")
        return proc.stdout

    def _tmux_run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-S", self._socket, *args], capture_output=True, text=True,
                              errors="replace", env=self._tmux_env(), timeout=10)

    def _start(self) -> None:
        """Configure the server once it accepts connections (its socket exists a moment before)."""
        deadline = time.monotonic() + 10
        size = f"{self.width}x{self.height}"
        while True:
            setup = self._tmux_run("set-option", "-g", "history-limit", "100000", ";",
                                   "set-option", "-g", "default-size", size, ";",
                                   "set-option", "-g", "escape-time", "0", ";",
                                   "set-option", "-g", "status", "off", ";",
                                   "set-option", "-gw", "remain-on-exit", "on", ";",
                                   "set-option", "-gw", "remain-on-exit-format", "")
            if setup.returncode == 0:
                break
            if self._server.poll() is not None or time.monotonic() > deadline:
                raise SandboxError(f"tmux server did not start: {setup.stderr.strip()}")
            time.sleep(0.01)
        self._tmux("new-session", "-d", "-s", "main", "-x", str(self.width), "-y", str(self.height),
                   "--", *self.sandbox.shell_argv())
        self._pane.append(int(self._tmux("display-message", "-p", "-t", "main", "#{pane_pid}").strip()))
        self._timer = threading.Timer(self.config.wall_clock_s, self._expire)
        self._timer.daemon = True
        self._timer.start()
        while True:
            screen = self.screen()
            if self._bare_prompt(screen):
                break
            if screen.dead or time.monotonic() > deadline:
                raise SandboxError("the sandboxed shell did not show a prompt:\n" + clean_screen(screen.rows))
            time.sleep(POLL_S)
        self._initial = clean_screen(screen.rows)

    def _expire(self) -> None:
        self._expired.set()
        for pid in self._pane:
            kill_sandbox_tree(pid, wait_s=2.0)

    def screen(self) -> Screen:
        """The visible pane now (one tmux call: cursor, history size and rows)."""
        out = self._tmux("display-message", "-p", "-t", "main",
                         "#{cursor_x} #{cursor_y} #{history_size} #{pane_dead}", ";",
                         "capture-pane", "-p", "-t", "main")
        head, _, body = out.partition("\n")
        cx, cy, hist, dead = head.split()
        rows = body.split("\n")
        if rows and rows[-1] == "":
            rows.pop()
        return Screen(rows=tuple(rows), cursor_x=int(cx), cursor_y=int(cy), history_size=int(hist),
                      dead=dead == "1")

    def _bare_prompt(self, screen: Screen) -> bool:
        """The cursor sits right after a shell or REPL prompt with nothing typed after it."""
        line = screen.cursor_line
        text = line.rstrip()
        if not len(text) <= screen.cursor_x <= len(text) + 1:
            return False
        if text in REPL_PROMPTS:
            return True
        match = self._prompt_re.match(line)
        return match is not None and match.end() >= len(text) and text.endswith(("#", "$"))

    # -- public API ------------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        """Whether the shell is still running (it exits on ``exit``, C-d at a prompt or a limit)."""
        if self._closed or self._expired.is_set():
            return False
        try:
            return not self.screen().dead
        except SandboxError:
            return False

    def initial_screen(self) -> str:
        """The screen before any action: the prompt, e.g. ``root@ad092d3df69c:/app#``."""
        return self._initial

    def step(self, actions: Sequence[Mapping[str, Any]]) -> str:
        """Send a Terminal-Bench keystroke list and return the screen from where it started.

        Each action is ``{"keystrokes": str, "duration": float}``: a whole string that is a tmux key
        name (``C-c``, ``Enter``, ``Up`` …) is sent as that key, anything else literally (a ``\\n``
        is Enter); empty keystrokes just wait. ``duration`` (capped to 0…60 s) is how long to wait
        after sending.
        """
        if self._closed:
            raise SandboxError("terminal session is closed")
        self._check_expired()
        parsed = [_parse_action(a, i) for i, a in enumerate(actions)]
        before = self.screen()
        start_abs = self._start_line(before)
        anchor = self._anchor(self._row(start_abs), before)
        for keys, duration in parsed:
            self._send(keys)
            self._wait(duration, before, grace=bool(keys), started=time.monotonic())
            self._check_expired()
            before = self.screen()
        return self._observe(start_abs, anchor)

    def _check_expired(self) -> None:
        if self._expired.is_set():
            raise SandboxTimeoutError(f"terminal session ran past its wall-clock limit of "
                                      f"{self.config.wall_clock_s:g}s and was killed")

    def _start_line(self, screen: Screen) -> int:
        """Absolute (history-inclusive) row where this action's observation starts."""
        row = screen.cursor_y
        if not screen.cursor_line.strip():
            for above in range(screen.cursor_y - 1, -1, -1):
                if self._prompt_re.match(screen.rows[above]):
                    row = above
                    break
            else:
                full = self._capture_rows(joined=False)
                limit = screen.history_size + screen.cursor_y
                for index in range(min(limit, len(full)) - 1, -1, -1):
                    if self._prompt_re.match(full[index]):
                        return index
        return screen.history_size + row

    def _send(self, keys: str) -> None:
        if not keys:
            return
        if is_key_name(keys):
            self._tmux("send-keys", "-t", "main", keys)
        else:
            self._tmux("send-keys", "-t", "main", "-l", "--", keys)

    def _wait(self, duration: float, before: Screen, *, grace: bool, started: float) -> None:
        """Wait ``duration``; in fast mode stop once a bare prompt has been stable for a moment.

        The screen must first have changed from ``before`` (the command ran and the prompt came
        back). Keystrokes that change nothing visible end after a short grace period; a plain wait
        (empty keystrokes) on an unchanged screen lasts its whole duration, since a background job
        may still be running.
        """
        deadline = started + duration
        last: Screen | None = None
        last_change = started
        while True:
            now = time.monotonic()
            if now >= deadline:
                return
            time.sleep(min(POLL_S, deadline - now))
            if not self.fast:
                continue
            screen = self.screen()
            now = time.monotonic()
            if screen != last:
                last, last_change = screen, now
                continue
            if screen.dead:
                return
            changed = screen != before or (grace and now - started >= NO_CHANGE_GRACE_S)
            if changed and now - last_change >= SETTLE_S and self._bare_prompt(screen):
                return

    def _capture_rows(self, *, joined: bool, end: int | None = None) -> list[str]:
        args = ["capture-pane", "-p", "-t", "main", "-S", "-"]
        if joined:
            args.append("-J")
        if end is not None:
            args += ["-E", str(end)]
        rows = self._tmux(*args).split("\n")
        if rows and rows[-1] == "":
            rows.pop()
        return rows

    def _row(self, absolute: int) -> str | None:
        """The physical row at an absolute (history-inclusive) index, or ``None`` if there is none."""
        rows = self._capture_rows(joined=False)
        return rows[absolute] if 0 <= absolute < len(rows) else None

    def _anchor(self, row: str | None, screen: Screen) -> str | None:
        """The part of the start row that typing cannot change: its prompt, or the text before the cursor."""
        if row is None:
            return None
        match = self._prompt_re.match(row)
        if match is not None:
            return match.group(0).rstrip()
        if row == screen.cursor_line:
            return row[: screen.cursor_x].rstrip()
        return row.rstrip()

    def _observe(self, start_abs: int, anchor: str | None) -> str:
        """Joined (unwrapped) lines from absolute row ``start_abs`` to the end of the screen.

        ``anchor`` is that row's text when the action started; if the row no longer holds it, the
        screen was cleared (``clear``) and everything left on it is new.
        """
        full = self._capture_rows(joined=True)
        row = self._row(start_abs)
        if start_abs <= 0 or anchor is None or row is None or not row.startswith(anchor):
            return clean_screen(full)
        rel_end = start_abs - 1 - self.screen().history_size
        head = self._capture_rows(joined=True, end=rel_end)
        skip = len(head)
        if skip and skip <= len(full) and full[skip - 1].rstrip() != head[skip - 1].rstrip():
            skip -= 1  # the start row continues a wrapped line: keep that whole line
        return clean_screen(full[skip:])

    def close(self) -> None:
        """Kill the shell, the tmux server and remove every temporary folder (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        self._finalizer()
        if self._owns_sandbox:
            self.sandbox.close()

    def __enter__(self) -> TerminalSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _parse_action(action: Mapping[str, Any], index: int) -> tuple[str, float]:
    if not isinstance(action, Mapping):
        raise ValueError(f"action {index}: expected an object with keystrokes and duration")
    keys = action.get("keystrokes", "")
    duration = action.get("duration", 1.0)
    if not isinstance(keys, str):
        raise ValueError(f"action {index}: keystrokes must be a string")
    if not isinstance(duration, int | float) or isinstance(duration, bool):
        raise ValueError(f"action {index}: duration must be a number")
    return keys, min(max(float(duration), 0.0), MAX_DURATION_S)

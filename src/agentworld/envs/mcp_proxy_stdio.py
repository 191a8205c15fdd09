"""The stdio side of ``agentworld record mcp``: the real server as a child process, relayed over pipes.

Why threads on raw file descriptors: no event loop, buffering or decoding can touch the bytes, and
a blocked read on one direction never delays the other.

The server lives no longer than the proxy, stopped as the MCP lifecycle asks of a client
(https://modelcontextprotocol.io/specification/2025-11-25/basic/lifecycle#shutdown): when the
client closes the proxy's stdin, the server's stdin is closed; a server still running ``grace_s``
later gets SIGTERM, and SIGKILL after another ``grace_s``. SIGTERM/SIGINT to the proxy are
forwarded, then the same grace, then SIGKILL (a second signal kills at once). The server runs in
its own process group, killed when the proxy exits so that helpers it started go too; on Linux it
also gets SIGKILL when the proxy dies without cleaning up (``PR_SET_PDEATHSIG``), so even ``kill
-9`` of the proxy leaves no server behind. Answered calls are on disk by then
(:class:`~agentworld.envs.mcp_proxy.TrajectorySink` writes each as it is answered).

Daemons a server detaches (``setsid``, double forks) leave its process group, so killing the group
misses them. They are tracked twice: the server's environment carries the tag of a
:class:`~agentworld.envs.janitor.Janitor`, which kills every tagged process when the proxy ends,
``kill -9`` included; and the proxy is a child subreaper (``PR_SET_CHILD_SUBREAPER``), so orphans
that scrubbed their environment still end up its children and are killed when it ends normally.
"""

from __future__ import annotations

import ctypes
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from agentworld.envs.mcp_proxy import RowLayout, SessionRecorder, TrajectorySink, log, rpc_messages

CHUNK = 65536
DEFAULT_GRACE_S = 2.0
"""As the MCP SDK's own stdio client waits at each step of the shutdown."""
POLL_S = 0.05
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def _pump(src: int, dst: int, on_line: Callable[[dict[str, Any]], None], on_end: Callable[[], None]) -> None:
    """Relay bytes ``src`` → ``dst`` unchanged; parse copies of each line (the stdio framing) to record.

    A chunk's complete lines are recorded (``on_line``) before the chunk is relayed, so what the
    recorder writes is written before the peer sees it.
    """
    buffer = bytearray()
    try:
        while data := os.read(src, CHUNK):
            buffer += data
            if b"\n" in data:
                *lines, rest = buffer.split(b"\n")
                buffer = bytearray(rest)
                for message in (m for line in lines if line.strip() for m in rpc_messages(line)):
                    on_line(message)
            view = memoryview(data)
            while view:
                view = view[os.write(dst, view):]
    except OSError:
        pass  # a closed peer: end this direction, the other side notices on its own
    finally:
        on_end()


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` making Linux SIGKILL the child when the proxy dies; ``None`` elsewhere.

    The death signal follows the *thread* that forked, so the server is started from the main
    thread (which lives as long as the proxy).
    """
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork: the child only calls it
    parent = os.getpid()

    def arm() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
        if os.getppid() != parent:  # the proxy died before the line above took effect
            os.kill(os.getpid(), signal.SIGKILL)

    return arm


def _set_subreaper(on: bool) -> None:
    """Make orphaned descendants of the server this process's children (Linux; elsewhere nothing)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)


def _end_descendants(earlier: Collection[int]) -> None:
    """SIGKILL every live descendant of this process but the ``earlier`` children (and what is below
    them: a caller's own processes) and reap those that were its children."""
    from agentworld.envs.procs import descendants, kill_until_gone

    seen: set[int] = set()

    def members() -> list[int]:
        found = descendants(os.getpid(), skip=earlier)
        seen.update(found)
        return found

    kill_until_gone(members)
    for pid in seen:
        with suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def _signal_group(proc: subprocess.Popen[bytes], signum: int) -> None:
    """Signal the server's process group (its pid: it leads a new session), if anything is left of it."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signum)


def _supervise(proc: subprocess.Popen[bytes], grace_s: float, client_gone: threading.Event,
               signals: list[int]) -> int:
    """Wait for the server to exit, escalating EOF → SIGTERM → SIGKILL; return its exit status."""
    stage, deadline, handled = "running", math.inf, 0
    while (code := proc.poll()) is None:
        now = time.monotonic()
        if len(signals) > handled:
            signum, handled = signals[handled], handled + 1
            if stage in ("running", "closed"):
                _signal_group(proc, signum)
                stage, deadline = "signalled", now + grace_s
            else:
                _signal_group(proc, signal.SIGKILL)
        elif stage == "running" and client_gone.is_set():
            stage, deadline = "closed", now + grace_s
        elif now >= deadline:
            if stage == "closed":
                log(f"the server still runs {grace_s:g} s after its input closed; sending SIGTERM")
                _signal_group(proc, signal.SIGTERM)
                stage, deadline = "signalled", now + grace_s
            else:
                log(f"the server still runs {grace_s:g} s after a signal; killing it")
                _signal_group(proc, signal.SIGKILL)
                deadline = math.inf
        with suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=POLL_S)
    return code


def run_stdio_proxy(command: Sequence[str], out: str | Path, *, layout: RowLayout, name: str | None = None,
                    grace_s: float = DEFAULT_GRACE_S) -> int:
    """Run ``command`` as the real server, relay our stdin/stdout to it, record; return its exit code.

    Must run in the main thread (signal handlers, and the server's death signal, are tied to it).
    ``grace_s``: how long the server may take to exit after its input closes, and again after SIGTERM.
    ``layout``: how the recorded calls read as rows (the recording domain's).
    """
    from agentworld.envs.janitor import Janitor

    sink = TrajectorySink(out)
    recorder = SessionRecorder(layout, name=name,
                               meta={"transport": "stdio", "server_command": list(command)})
    from agentworld.envs.procs import descendants

    earlier = set(descendants(os.getpid()))
    _set_subreaper(True)
    janitor = Janitor()
    try:
        proc = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
                                start_new_session=True, preexec_fn=_die_with_parent(),
                                env={**os.environ, **janitor.env})
    except OSError as exc:
        janitor.close()
        _set_subreaper(False)
        sink.close()
        log(f"cannot start the MCP server {command[0]!r}: {exc}")
        return 127
    assert proc.stdin is not None and proc.stdout is not None
    server_in, server_out = proc.stdin.fileno(), proc.stdout.fileno()
    client_gone = threading.Event()
    signals: list[int] = []

    def client_closed() -> None:
        proc.stdin.close()  # type: ignore[union-attr]
        client_gone.set()

    def answered(message: dict[str, Any]) -> None:
        if recorder.from_server(message):
            sink.flush(recorder)

    previous = {s: signal.signal(s, lambda signum, _frame: signals.append(signum))
                for s in (signal.SIGTERM, signal.SIGINT)}
    upstream = threading.Thread(target=_pump, args=(0, server_in, recorder.from_client, client_closed),
                                daemon=True)
    downstream = threading.Thread(target=_pump, args=(server_out, 1, answered, sys.stdout.close), daemon=True)
    returncode = 1
    try:
        upstream.start()
        downstream.start()
        returncode = _supervise(proc, grace_s, client_gone, signals)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _signal_group(proc, signal.SIGKILL)  # whatever the server left running in its group
        janitor.close()  # daemons it detached that carry its tag
        _end_descendants(earlier)  # and those that scrubbed their environment but were reparented here
        _set_subreaper(False)
        downstream.join(timeout=5)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        try:
            sink.finish(recorder)
        finally:
            sink.close()
    return 128 - returncode if returncode < 0 else returncode  # killed by a signal: as a shell says

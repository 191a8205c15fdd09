"""Run one ``agentworld`` command on a hostile input, bounded in time and memory, and say how it ended.

Why a harness: the fuzz suite (``tests/fuzz/``) feeds generated hostile inputs to every reader and every
``--out`` guard and asserts the same few things each time — one red line and exit 2 (or a clean exit),
no traceback, within a time and memory bound, nothing outside the run folder changed. Starting a
Python process per generated case costs a second; forking one costs milliseconds. So each case runs
in a child forked from a *forkserver* that imported the CLI (and every command group) once: the
server is single-threaded (a fork of the pytest process itself could inherit a lock held by another
thread), the child gets ``RLIMIT_AS`` as its memory bound, and the parent kills it at the time bound.

Usage::

    outcome = run_cli(["eval", "run", "--data", str(path), ...], cwd=tmp_path)
    assert_clean(outcome)                 # exit 0 or 2; if 2, one "error:" line; no traceback
    before = snapshot(tmp_path); ...; assert snapshot(tmp_path) == before

``count(target)`` tallies the generated cases per target; ``tests/fuzz/conftest.py`` prints the
tally at the end of the run (the numbers the security guide quotes).
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import resource
import signal
import stat
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PRELOAD = ["agentworld.cli", "agentworld.cli_support", "agentworld.outputs", "agentworld.inputs",
           "agentworld.schema", "agentworld.eval.cli", "agentworld.data.cli", "agentworld.synth.cli",
           "agentworld.serve.serve_cli", "agentworld.record_cli", "agentworld.doctor.cli",
           "agentworld.plan.cli", "agentworld.optimize.cli", "agentworld.demo_cli", "agentworld.train.cli"]
"""Modules the forkserver imports once, so a case pays only the fork (not the imports)."""

DEFAULT_TIMEOUT_S = 30.0
"""The time bound of one case (a refusal takes well under a second; this is for a hang)."""
DEFAULT_MEMORY_BYTES = 3 << 30
"""The memory bound of one case (address space of the child; the CLI with its imports needs ~1 GiB)."""

CASES: Counter[str] = Counter()
"""Generated cases run per target, across the session (printed by ``tests/fuzz/conftest.py``)."""
FOUND: Counter[str] = Counter()
"""Cases per target whose outcome broke a property (recorded before the assertion fails)."""

_context: Any = None


def count(target: str) -> None:
    """Tally one generated case of ``target``."""
    CASES[target] += 1


@dataclass(frozen=True)
class Outcome:
    """How one command ended: its exit code (None when it was killed), what it printed, how long."""

    argv: tuple[str, ...]
    code: int | None
    stdout: str
    stderr: str
    seconds: float
    killed: str | None
    """``"timeout"`` (past the time bound) or a signal name; None when it exited on its own."""
    peak_rss_kb: int

    def describe(self) -> str:
        """A few lines for an assertion message."""
        return (f"agentworld {' '.join(self.argv)}\n  exit {self.code} killed={self.killed} "
                f"{self.seconds:.1f}s rss={self.peak_rss_kb // 1024} MiB\n  stderr: {self.stderr[-2000:]!r}\n"
                f"  stdout: {self.stdout[-500:]!r}")


def _child(argv: list[str], cwd: str, env: dict[str, str], memory_bytes: int, out_path: str,
           err_path: str, rss_path: str) -> None:
    os.chdir(cwd)
    os.environ.update(env)
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    out = os.open(out_path, os.O_WRONLY | os.O_TRUNC)
    err = os.open(err_path, os.O_WRONLY | os.O_TRUNC)
    os.dup2(out, 1)
    os.dup2(err, 2)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - the child's whole life
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
    code = 1
    try:
        from agentworld.cli import main

        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        with contextlib.suppress(Exception), open(rss_path, "w") as handle:
            handle.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
        os._exit(code)


def _server() -> Any:
    global _context
    if _context is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        _context = context
    return _context


def run_cli(argv: Sequence[str], *, cwd: str | Path, timeout_s: float = DEFAULT_TIMEOUT_S,
            memory_bytes: int = DEFAULT_MEMORY_BYTES, env: dict[str, str] | None = None) -> Outcome:
    """``agentworld ARGV`` in a forked child, in ``cwd``, killed past ``timeout_s``.

    ``env`` is added to the child's environment (the test's own, with ``NO_COLOR`` and a wide
    terminal so messages are not wrapped).
    """
    context = _server()
    with tempfile.TemporaryDirectory(prefix="aw-fuzz-") as scratch:
        out_path, err_path, rss_path = (os.path.join(scratch, n) for n in ("out", "err", "rss"))
        for name in (out_path, err_path):
            Path(name).touch()
        child_env = {"NO_COLOR": "1", "COLUMNS": "400", "TERM": "dumb", **(env or {})}
        process = context.Process(target=_child, args=(list(argv), str(cwd), child_env, memory_bytes,
                                                       out_path, err_path, rss_path), daemon=True)
        start = time.monotonic()
        process.start()
        process.join(timeout_s)
        killed = None
        if process.is_alive():
            killed = "timeout"
            process.kill()
            process.join(10)
        seconds = time.monotonic() - start
        code = process.exitcode
        if killed is None and code is not None and code < 0:
            killed = signal.Signals(-code).name
        try:
            rss = int(Path(rss_path).read_text() or 0)
        except (OSError, ValueError):
            rss = 0
        return Outcome(tuple(argv), None if killed else code, Path(out_path).read_text(errors="replace"),
                       Path(err_path).read_text(errors="replace"), seconds, killed, rss)


def problems(outcome: Outcome, *, allow: Sequence[int] = (0, 2)) -> list[str]:
    """What is wrong with how a command met hostile input (empty when it met it well).

    Well: it ended on its own within the bounds, with an exit code in ``allow``, no traceback, and —
    when it exited 2 — with its error as one line starting ``error:`` (the red line; warnings may
    come before it).
    """
    found = []
    if outcome.killed is not None:
        found.append(f"killed ({outcome.killed}) after {outcome.seconds:.1f}s")
    elif outcome.code not in allow:
        found.append(f"exit {outcome.code} (expected one of {list(allow)})")
    if "Traceback (most recent call last)" in outcome.stderr or "Traceback" in outcome.stdout:
        found.append("a traceback")
    if outcome.code == 2:
        lines = [line for line in outcome.stderr.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("error:")]
        if len(errors) != 1 or lines[-1] != errors[0]:
            found.append("exit 2 without exactly one closing 'error:' line")
    return found


def assert_clean(outcome: Outcome, *, target: str | None = None, allow: Sequence[int] = (0, 2)) -> None:
    """Fail (naming the command, its output and the broken property) unless :func:`problems` is empty;
    a broken case is tallied in :data:`FOUND` under ``target``."""
    found = problems(outcome, allow=allow)
    if found and target is not None:
        FOUND[target] += 1
    assert not found, f"{'; '.join(found)}\n{outcome.describe()}"


def snapshot(root: str | Path) -> dict[str, tuple[int, str]]:
    """Every entry under ``root`` (links not followed): its type bits and a digest of what it holds
    (a file's bytes, a link's target), to compare before and after a command."""
    root = Path(root)
    found: dict[str, tuple[int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            try:
                info = path.lstat()
            except OSError:
                continue
            kind = stat.S_IFMT(info.st_mode)
            if stat.S_ISLNK(info.st_mode):
                digest = os.readlink(path)
            elif stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
            else:
                digest = ""
            found[str(path.relative_to(root))] = (kind, digest)
    return found

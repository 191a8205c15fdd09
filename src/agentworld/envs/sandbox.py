"""A throw-away Linux sandbox for real shell sessions: bubblewrap + an unprivileged uid + rlimits.

Why this shape: recorded terminal trajectories must come from a *real* bash, but the commands in
scenarios (fork bombs, endless loops, ``rm -rf``) must never touch the host. Each :class:`Sandbox`
owns a private host folder mounted as ``/app`` (and one as ``/root``); everything else is
read-only (``/usr``, ``/etc``) or a fresh tmpfs (``/tmp``). All namespaces are unshared (no
network, own PID namespace, uid 0 mapped to an unprivileged host uid) and resource limits are
applied with ``prlimit``. When running as real root the sandbox first drops to uid 65534 with
``setpriv``: the kernel ignores ``RLIMIT_NPROC`` for root, so only a non-root real uid stops a
fork bomb. Inside, the shell sees a container-like world: ``root@<12-hex-id>:/app#``.

The hostname is derived from a seed (:func:`container_id`) so re-recording gives the same screens.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentworld.errors import AgentWorldError

NOBODY_UID = 65534
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
FIXED_GIT_DATE = "2024-01-01T00:00:00+00:00"

BASHRC = """\
# ~/.bashrc: executed by bash(1) for non-login shells.
PS1='\\u@\\h:\\w\\$ '
set +H
bind 'set enable-bracketed-paste off' 2>/dev/null
umask 022
"""


class SandboxError(AgentWorldError):
    """The sandbox could not be started or used (missing tools, dead session, …)."""


class SandboxTimeoutError(SandboxError):
    """A session ran past its wall-clock limit and was killed."""


def container_id(seed: int | str | None = None) -> str:
    """A 12-hex-digit container-style id: from ``seed`` (reproducible) or random when ``None``."""
    if seed is None:
        return os.urandom(6).hex()
    return hashlib.sha256(f"agentworld-sandbox:{seed}".encode()).hexdigest()[:12]


def missing_tools() -> list[str]:
    """The external programs the sandbox needs that are not on ``PATH`` (empty when all are there)."""
    tools = ["bwrap", "prlimit", "bash"] + (["setpriv"] if os.geteuid() == 0 else [])
    return [t for t in tools if shutil.which(t) is None]


@dataclass(frozen=True)
class SandboxConfig:
    """Limits and identity of one sandbox; defaults suit interactive recording.

    Attributes:
        max_processes: ``RLIMIT_NPROC`` of the sandbox uid (stops fork bombs).
        memory_bytes: ``RLIMIT_AS`` per process.
        cpu_seconds: ``RLIMIT_CPU`` per process (stops endless loops).
        file_size_bytes: ``RLIMIT_FSIZE`` (largest file a process may write).
        open_files: ``RLIMIT_NOFILE``.
        tmp_size_bytes: size of the ``/tmp`` tmpfs.
        wall_clock_s: lifetime of one terminal session / default timeout of :meth:`Sandbox.run`.
        hostname: 12-hex container id; ``None`` derives it from the seed.
        uid: host uid the sandbox runs as when started by root.
        nice: scheduling niceness, so a busy sandbox leaves the host responsive.
        env: extra environment variables inside the sandbox.
    """

    max_processes: int = 256
    memory_bytes: int = 1 << 30
    cpu_seconds: int = 300
    file_size_bytes: int = 256 << 20
    open_files: int = 1024
    tmp_size_bytes: int = 256 << 20
    wall_clock_s: float = 900.0
    hostname: str | None = None
    uid: int = NOBODY_UID
    nice: int = 5
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RunResult:
    """Outcome of :meth:`Sandbox.run`; ``timed_out`` means the wall-clock limit killed it."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    elapsed_s: float


def sandbox_env(config: SandboxConfig, hostname: str) -> dict[str, str]:
    """The complete environment inside the sandbox (the host's is never leaked in)."""
    env = {
        "HOME": "/root",
        "USER": "root",
        "LOGNAME": "root",
        "SHELL": "/bin/bash",
        "TERM": "xterm",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PATH": DEFAULT_PATH,
        "TZ": "UTC",
        "HOSTNAME": hostname,
        "PYTHONHASHSEED": "0",
        "GIT_AUTHOR_DATE": FIXED_GIT_DATE,
        "GIT_COMMITTER_DATE": FIXED_GIT_DATE,
    }
    env.update(config.env)
    return env


def _proc_children(pid: int) -> list[int]:
    """Direct children of ``pid`` (scans /proc: this kernel may lack ``/proc/PID/task/*/children``)."""
    kids: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            kids.append(int(entry))
    return kids


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return False
    return data[data.rfind(b")") + 2:][:1] != b"Z"


def kill_sandbox_tree(outer_pid: int, *, wait_s: float = 3.0) -> None:
    """Kill a running ``bwrap`` (its PID namespace first, then bwrap itself) and wait for it.

    Killing bwrap's inner process (PID 1 of the sandbox's namespace) makes the kernel kill every
    process in the namespace, fork bombs included, and lets the outer bwrap be reaped by its own
    parent: killing the outer one first would orphan the inner one (a zombie where PID 1 of the
    host does not reap).
    """
    for child in _proc_children(outer_pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, signal.SIGKILL)
    deadline = time.monotonic() + wait_s
    while _alive(outer_pid) and time.monotonic() < deadline:
        time.sleep(0.02)
        if time.monotonic() > deadline - wait_s / 2:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(outer_pid, signal.SIGKILL)


def _rmtree(path: Path) -> None:
    def onerror(func, name, _exc):  # type: ignore[no-untyped-def]
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(name), stat.S_IRWXU)
            os.chmod(name, stat.S_IRWXU)
            func(name)

    shutil.rmtree(path, onerror=onerror)


ROOT_PREFIX = "agentworld-sandbox-"
"""Host folders of sandboxes are ``<tmp>/agentworld-sandbox-<owner pid>-<random>``."""


def sweep_stale_roots() -> list[Path]:
    """Remove sandbox folders whose owning process is gone (it was killed before it could clean up).

    Processes of a killed owner die with it (tmux gets ``PR_SET_PDEATHSIG``, bwrap
    ``--die-with-parent``); its folders cannot, so the next sandbox removes them.
    """
    removed = []
    for folder in Path(tempfile.gettempdir()).glob(f"{ROOT_PREFIX}*-*"):
        owner = folder.name[len(ROOT_PREFIX):].split("-", 1)[0]
        if not owner.isdigit() or int(owner) == os.getpid():
            continue
        try:
            os.kill(int(owner), 0)
        except ProcessLookupError:
            _rmtree(folder)
            removed.append(folder)
        except PermissionError:
            continue
    return removed


class Sandbox:
    """Private host folders plus the command line that runs programs inside the sandbox.

    Use as a context manager; :meth:`close` (also run by a finalizer at exit) removes the host
    folders. :class:`~agentworld.envs.terminal.TerminalSession` runs an interactive bash in it;
    :meth:`run` runs one-shot commands (scenario setup, tests).
    """

    def __init__(self, config: SandboxConfig | None = None, *, seed: int | str | None = None) -> None:
        missing = missing_tools()
        if missing:
            raise SandboxError(f"sandbox needs {', '.join(missing)} on PATH "
                               "(Debian/Ubuntu: apt-get install bubblewrap util-linux)")
        self.config = config or SandboxConfig()
        self.hostname = self.config.hostname or container_id(seed)
        self.as_root = os.geteuid() == 0
        self.uid = self.config.uid if self.as_root else os.getuid()
        self.gid = self.config.uid if self.as_root else os.getgid()
        sweep_stale_roots()
        self.root = Path(tempfile.mkdtemp(prefix=f"{ROOT_PREFIX}{os.getpid()}-"))
        self.root.chmod(0o711)
        self.app_dir = self.root / "app"
        self.home_dir = self.root / "home"
        for folder in (self.app_dir, self.home_dir):
            folder.mkdir(mode=0o755)
        (self.home_dir / ".bashrc").write_text(BASHRC, encoding="utf-8")
        if self.as_root:
            for item in (self.app_dir, self.home_dir, self.home_dir / ".bashrc"):
                os.chown(item, self.uid, self.gid)
        self._finalizer = weakref.finalize(self, _rmtree, self.root)

    # -- command lines ---------------------------------------------------------------------------

    def argv(self, command: Sequence[str], *, new_session: bool = False) -> list[str]:
        """The host command line that runs ``command`` inside this sandbox, limits applied."""
        cfg = self.config
        out = ["prlimit", f"--nproc={cfg.max_processes}", f"--as={cfg.memory_bytes}",
               f"--cpu={cfg.cpu_seconds}", f"--fsize={cfg.file_size_bytes}",
               f"--nofile={cfg.open_files}", "--core=0"]
        if cfg.nice:
            out += ["nice", "-n", str(cfg.nice)]
        if self.as_root:
            out += ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups"]
        out += ["bwrap", "--unshare-all", "--unshare-user", "--uid", "0", "--gid", "0",
                "--hostname", self.hostname,
                "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
                "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin",
                "--ro-bind", "/etc", "/etc",
                "--bind", str(self.app_dir), "/app", "--bind", str(self.home_dir), "/root",
                "--size", str(cfg.tmp_size_bytes), "--tmpfs", "/tmp",
                "--dev", "/dev", "--proc", "/proc", "--chdir", "/app", "--die-with-parent", "--clearenv"]
        if new_session:
            out.append("--new-session")
        for key, value in sandbox_env(cfg, self.hostname).items():
            out += ["--setenv", key, value]
        return [*out, "--", *command]

    def shell_argv(self) -> list[str]:
        """An interactive bash reading the sandbox's ``/root/.bashrc`` (prompt, umask, readline)."""
        return self.argv(["bash", "--noprofile", "--rcfile", "/root/.bashrc", "-i"])

    # -- one-shot commands -----------------------------------------------------------------------

    def run(self, cmd: str, timeout: float | None = None, *, input: str | None = None) -> RunResult:
        """Run ``bash -c cmd`` in the sandbox; on timeout kill the whole sandbox and say so.

        Files under ``/app`` and ``/root`` persist between runs and into a terminal session of the
        same sandbox; ``/tmp`` and processes do not.
        """
        timeout = self.config.wall_clock_s if timeout is None else timeout
        started = time.monotonic()
        proc = subprocess.Popen(self.argv(["bash", "-c", cmd], new_session=True),
                                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, text=True, errors="replace")
        timed_out = False
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_sandbox_tree(proc.pid)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        except BaseException:
            kill_sandbox_tree(proc.pid)
            proc.kill()
            proc.wait()
            raise
        return RunResult(returncode=proc.returncode, stdout=out, stderr=err, timed_out=timed_out,
                         elapsed_s=time.monotonic() - started)

    # -- lifetime --------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def close(self) -> None:
        """Remove the sandbox's host folders (idempotent)."""
        self._finalizer()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

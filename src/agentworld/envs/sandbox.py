"""A throw-away Linux sandbox for real shell sessions: bubblewrap, a budget per sandbox, rlimits.

Why this shape: recorded terminal trajectories must come from a *real* bash, but the commands in
scenarios (fork bombs, endless loops, ``rm -rf``, filling the disk) must never touch the host or the
other sandboxes. Each :class:`Sandbox` owns a private host folder (a size-limited tmpfs where the
machine allows it) holding ``/app`` and ``/root``; of the host only ``/usr`` (its programs and
libraries) and ``/etc`` (loader cache, alternatives, user names) are mounted, read-only; ``/tmp`` is
a fresh tmpfs, ``/dev`` and ``/proc`` the sandbox's own. All namespaces are unshared (no network,
own PID namespace, uid 0 mapped to an unprivileged host uid). Its total memory and process count
are bounded by its own cgroups (:mod:`agentworld.envs.budget`), and per-process limits (CPU time,
address space, file size, open files) are applied with ``prlimit``. When running as real root the
sandbox drops to an unprivileged uid with ``setpriv``. Inside, the shell sees a container-like
world: ``root@<12-hex-id>:/app#``.

The hostname is derived from a seed (:func:`container_id`) so re-recording gives the same screens.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentworld.envs.budget import Budget, establish, human_size, release, warn_unenforced
from agentworld.envs.cgroups import cgroup_pids
from agentworld.envs.procs import kill_sandbox_tree, uid_pids
from agentworld.errors import AgentWorldError

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
    """Budgets, limits and identity of one sandbox; defaults suit interactive recording.

    The first three are budgets of the whole sandbox, not of each process in it.

    Attributes:
        memory_budget_bytes: RAM of every process in the sandbox together, plus its files in
            ``/app``, ``/root`` and ``/tmp`` (they live in memory); past it the kernel's OOM killer
            kills the sandbox's largest process. A memory cgroup (swap included where accounted).
        max_processes: processes and threads in the sandbox at once (stops fork bombs). A pids
            cgroup; without one, ``RLIMIT_NPROC`` of the sandbox's own uid.
        disk_budget_bytes: size of ``/app`` and ``/root`` together (a tmpfs of that size, so it
            also counts toward ``memory_budget_bytes``); writes past it fail with ``ENOSPC``.
        process_memory_bytes: ``RLIMIT_AS`` (address space) of each process.
        cpu_seconds: ``RLIMIT_CPU`` per process (stops endless loops).
        file_size_bytes: ``RLIMIT_FSIZE`` (largest file a process may write).
        open_files: ``RLIMIT_NOFILE``.
        tmp_size_bytes: size of the ``/tmp`` tmpfs.
        wall_clock_s: lifetime of one terminal session / default timeout of :meth:`Sandbox.run`.
        hostname: 12-hex container id; ``None`` derives it from the seed.
        uid: host uid the sandbox runs as when started by root; ``None``: 65534 (nobody) when the sandbox has
            a pids cgroup, otherwise a uid of its own (so ``RLIMIT_NPROC`` is per sandbox).
        nice: scheduling niceness, so a busy sandbox leaves the host responsive.
        env: extra environment variables inside the sandbox.
        use_cgroups: give the sandbox its own cgroups where the machine allows; ``False`` keeps
            to rlimits and a private uid (what happens anyway on machines without cgroups).
    """

    memory_budget_bytes: int = 2 << 30
    max_processes: int = 256
    disk_budget_bytes: int = 1 << 30
    process_memory_bytes: int = 1 << 30
    cpu_seconds: int = 300
    file_size_bytes: int = 256 << 20
    open_files: int = 1024
    tmp_size_bytes: int = 256 << 20
    wall_clock_s: float = 900.0
    hostname: str | None = None
    uid: int | None = None
    nice: int = 5
    env: Mapping[str, str] = field(default_factory=dict)
    use_cgroups: bool = True

    def __post_init__(self) -> None:
        for name in ("memory_budget_bytes", "max_processes", "disk_budget_bytes", "process_memory_bytes",
                     "cpu_seconds", "file_size_bytes", "open_files", "tmp_size_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise SandboxError(f"SandboxConfig.{name} must be a positive integer, not {value!r}")


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


ROOT_PREFIX = "agentworld-sandbox-"
"""Host folders of sandboxes are ``<tmp>/agentworld-sandbox-<owner pid>-<random>`` (their cgroups too)."""
TMUX_PREFIX = "agentworld-tmux-"
"""Private tmux socket folders of terminal sessions are ``<tmp>/agentworld-tmux-<owner pid>-<random>``."""


def sweep_stale_roots() -> list[Path]:
    """Free sandbox and tmux folders whose owning process is gone (killed before it could clean up).

    Processes of a killed owner die with it (tmux gets ``PR_SET_PDEATHSIG``, bwrap
    ``--die-with-parent``); its folders, cgroups and tmpfs mounts cannot, so the next sandbox
    releases them.
    """
    removed = []
    for prefix in (ROOT_PREFIX, TMUX_PREFIX):
        for folder in Path(tempfile.gettempdir()).glob(f"{prefix}*-*"):
            owner = folder.name[len(prefix):].split("-", 1)[0]
            if not owner.isdigit() or int(owner) == os.getpid():
                continue
            try:
                os.kill(int(owner), 0)
            except ProcessLookupError:
                with contextlib.suppress(OSError):
                    release(folder)
                removed.append(folder)
            except PermissionError:
                continue
    return removed


class Sandbox:
    """Private host folders, a budget, and the command line that runs programs inside the sandbox.

    Use as a context manager; :meth:`close` (also run by a finalizer at exit) kills what is still
    running in it and frees its folders, tmpfs and cgroups.
    :class:`~agentworld.envs.terminal.TerminalSession` runs an interactive bash in it; :meth:`run`
    runs one-shot commands (scenario setup, tests).

    Where the machine cannot enforce a budget (not root, no writable cgroup), the first sandbox of
    the process logs one warning naming what is not enforced and why; :attr:`budget` says it too.
    """

    def __init__(self, config: SandboxConfig | None = None, *, seed: int | str | None = None) -> None:
        missing = missing_tools()
        if missing:
            raise SandboxError(f"sandbox needs {', '.join(missing)} on PATH "
                               "(Debian/Ubuntu: apt-get install bubblewrap util-linux)")
        self.config = cfg = config or SandboxConfig()
        self.hostname = cfg.hostname or container_id(seed)
        self.as_root = os.geteuid() == 0
        sweep_stale_roots()
        self.root = Path(tempfile.mkdtemp(prefix=f"{ROOT_PREFIX}{os.getpid()}-"))
        try:
            self.budget: Budget = establish(
                self.root, memory_budget_bytes=cfg.memory_budget_bytes, max_processes=cfg.max_processes,
                disk_budget_bytes=cfg.disk_budget_bytes, uid=cfg.uid, use_cgroups=cfg.use_cgroups)
        except OSError as exc:
            release(self.root)
            raise SandboxError(f"cannot set up the sandbox's budget: {exc}") from exc
        lease = None if self.budget.lease_fd is None else (self.budget.uid, self.budget.lease_fd)
        self._finalizer = weakref.finalize(self, release, self.root, lease)
        warn_unenforced(self.budget.unenforced)
        self.uid = self.budget.uid
        self.gid = self.uid if self.as_root else os.getgid()
        self.root.chmod(0o711)
        self.app_dir = self.root / "app"
        self.home_dir = self.root / "home"
        for folder in (self.app_dir, self.home_dir):
            folder.mkdir(mode=0o755)
        (self.home_dir / ".bashrc").write_text(BASHRC, encoding="utf-8")
        if self.as_root:
            for item in (self.app_dir, self.home_dir, self.home_dir / ".bashrc"):
                os.chown(item, self.uid, self.gid)

    def describe_budget(self) -> str:
        """One line for logs: the budgets and what enforces them here."""
        cfg, budget = self.config, self.budget
        memory = "memory cgroup" if "memory" in budget.cgroups else "not enforced"
        procs = "pids cgroup" if "pids" in budget.cgroups else f"RLIMIT_NPROC of uid {budget.uid}"
        disk = "tmpfs" if budget.disk_mounted else "not enforced"
        return (f"memory {human_size(cfg.memory_budget_bytes)} ({memory}), {cfg.max_processes} processes "
                f"({procs}), /app+/root {human_size(cfg.disk_budget_bytes)} ({disk})")

    def processes(self) -> list[int] | None:
        """Host pids of the processes running in this sandbox now (those of its cgroup, or of its
        private uid); ``None`` when they cannot be told apart from other processes (no cgroup, shared uid).
        """
        folder = self.budget.cgroups.get("pids") or self.budget.cgroups.get("memory")
        if folder is not None:
            return cgroup_pids(folder)
        return uid_pids(self.uid) if self.budget.lease_fd is not None else None

    def memory_peak_bytes(self) -> int | None:
        """Most memory the sandbox has used at once (its memory cgroup's peak); ``None`` without one."""
        folder = self.budget.cgroups.get("memory")
        if folder is None:
            return None
        for name in ("memory.max_usage_in_bytes", "memory.peak"):
            with contextlib.suppress(OSError, ValueError):
                return int((folder / name).read_text())
        return None

    # -- command lines ---------------------------------------------------------------------------

    def argv(self, command: Sequence[str], *, new_session: bool = False) -> list[str]:
        """The host command line that runs ``command`` inside this sandbox, limits applied."""
        cfg = self.config
        out = [*self.budget.join_argv(), "prlimit", f"--as={cfg.process_memory_bytes}",
               f"--cpu={cfg.cpu_seconds}", f"--fsize={cfg.file_size_bytes}",
               f"--nofile={cfg.open_files}", "--core=0"]
        if self.budget.nproc_rlimit:
            out.insert(out.index("prlimit") + 1, f"--nproc={cfg.max_processes}")
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
        """Kill what still runs in the sandbox; free its folders, tmpfs, cgroups and uid (idempotent)."""
        self._finalizer()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

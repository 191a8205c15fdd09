"""Budgets of a whole sandbox, not of each process in it: memory, disk and processes (real bwrap, real bash).

Each test fails where the limit is per process or per uid (three 800 MB processes pass a 1 GiB
``RLIMIT_AS``; ``/app`` on the host's disk; ``RLIMIT_NPROC`` of uid 65534 shared by every sandbox)
and skips, naming the reason, on a machine that cannot enforce that budget (the sandbox says so).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from agentworld.envs.budget import lease_uid, release
from agentworld.envs.sandbox import Sandbox, SandboxConfig, SandboxError, missing_tools
from agentworld.envs.terminal import TerminalSession

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(bool(missing_tools()) or shutil.which("tmux") is None,
                       reason=f"needs bubblewrap and tmux (missing: {missing_tools() or ['tmux']})"),
]

MiB = 1 << 20

HOGS = """\
import os, subprocess, sys, time
HOG = "import time; block = b'x' * (800 << 20); time.sleep(4)"
hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(3)]
peak = 0
while any(h.poll() is None for h in hogs):
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/status") as status:
                total += sum(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
        except OSError:
            pass
    peak = max(peak, total)
    time.sleep(0.02)
print("hog exit codes:", *(h.returncode for h in hogs))
print(f"peak resident: {peak >> 10} MiB")
"""


def _skip_unless(box: Sandbox, enforced: bool, what: str) -> None:
    if not enforced:
        pytest.skip(f"{what} is not enforced here: {'; '.join(box.budget.unenforced)}")


def test_three_800mb_processes_share_one_memory_budget() -> None:
    """Default budget (2 GiB): three 800 MB processes do not fit together; the kernel kills one in the box."""
    config = SandboxConfig()
    with Sandbox(config) as box:
        _skip_unless(box, "memory" in box.budget.cgroups, "the memory budget")
        (box.app_dir / "hogs.py").write_text(HOGS)
        with TerminalSession(sandbox=box) as term:
            screen = term.step([{"keystrokes": "python3 hogs.py\n", "duration": 60}])
            after = term.step([{"keystrokes": "echo still here\n", "duration": 5}])
        peak = box.memory_peak_bytes()
    codes = [int(c) for c in re.search(r"hog exit codes: (.*)", screen).group(1).split()]  # type: ignore[union-attr]
    resident = int(re.search(r"peak resident: (\d+) MiB", screen).group(1)) * MiB  # type: ignore[union-attr]
    assert -9 in codes, f"the session sees a hog killed by SIGKILL:\n{screen}"
    assert resident < 3 * 800 * MiB, f"never all three resident at once:\n{screen}"
    assert peak is not None and peak <= config.memory_budget_bytes, f"cgroup peak {peak} bytes"
    assert "still here" in after.splitlines(), "the shell survives the OOM kill"


def test_writes_to_app_and_root_stop_at_the_disk_budget() -> None:
    budget = 64 * MiB
    with Sandbox(SandboxConfig(disk_budget_bytes=budget)) as box:
        _skip_unless(box, box.budget.disk_mounted, "the disk budget")
        full = box.run("for i in 1 2 3; do head -c 30M /dev/zero > /app/f$i || echo failed f$i; done; "
                       "head -c 30M /dev/zero > /root/g || echo failed g", timeout=60)
        on_host = sum(f.stat().st_size for d in (box.app_dir, box.home_dir) for f in d.iterdir())
        kept = box.run("ls /app; rm /app/f1 /root/g; head -c 30M /dev/zero > /app/f4 && echo wrote f4")
    assert "No space left on device" in full.stderr
    assert "failed f3" in full.stdout and "failed g" in full.stdout, full.stdout
    assert on_host <= budget, f"{on_host >> 20} MiB written past a {budget >> 20} MiB budget"
    assert {"f1", "f2"} <= set(kept.stdout.split()), "files persist between runs"
    assert "wrote f4" in kept.stdout, "freed space can be written again"


@pytest.mark.parametrize("use_cgroups", [True, False], ids=["cgroup", "private-uid"])
def test_fork_bomb_in_one_sandbox_does_not_stop_another(use_cgroups: bool) -> None:
    config = SandboxConfig(max_processes=64, use_cgroups=use_cgroups)
    bomber = Sandbox(config)
    if "pids" not in bomber.budget.cgroups and bomber.budget.lease_fd is None:
        bomber.close()
        _skip_unless(bomber, False, "a per-sandbox process budget")
    log = bomber.app_dir / "bomb.log"
    bomb = "exec 2>/app/bomb.log; :(){ :|:& };:; sleep 60"
    thread = threading.Thread(target=bomber.run, args=(bomb,), kwargs={"timeout": 60})
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while "Resource temporarily unavailable" not in (log.read_text() if log.exists() else ""):
            assert time.monotonic() < deadline, "the fork bomb never reached its process limit"
            time.sleep(0.05)
        with Sandbox(config) as other:
            result = other.run("echo started; bash -c 'echo child'", timeout=30)
    finally:
        bomber.close()
        thread.join(timeout=30)
    assert result.returncode == 0 and result.stdout.split() == ["started", "child"], result.stderr


def test_budgets_must_be_positive_integers() -> None:
    with pytest.raises(SandboxError, match=r"disk_budget_bytes must be a positive integer, not 0"):
        SandboxConfig(disk_budget_bytes=0)
    with pytest.raises(SandboxError, match=r"memory_budget_bytes must be a positive integer, not 1.5"):
        SandboxConfig(memory_budget_bytes=1.5)  # type: ignore[arg-type]


NON_ROOT = """
import sys, types
package = types.ModuleType("agentworld.envs")
package.__path__ = [sys.argv[1]]
sys.modules["agentworld.envs"] = package
from agentworld.envs.sandbox import Sandbox
for _ in range(2):
    with Sandbox() as box:
        print(box.run("echo ok").stdout.strip(), "|", box.describe_budget(), flush=True)
"""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root to become another user")
def test_non_root_user_falls_back_and_warns_once(tmp_path: Path) -> None:
    """As a plain user: rlimits only, one warning naming each budget not enforced and why."""
    src = Path(__file__).parents[2] / "src"
    python = shutil.which("python3", path="/usr/bin:/usr/local/bin")
    uid, lock = lease_uid()
    tmp_path.chmod(0o777)
    try:
        argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "env", "-i",
                "PATH=/usr/bin:/bin", f"HOME={tmp_path}", f"TMPDIR={tmp_path}", f"PYTHONPATH={src}",
                str(python), "-c"]
        probe = subprocess.run([*argv, "import agentworld"], capture_output=True, text=True, cwd=tmp_path)
        if python is None or probe.returncode != 0:
            pytest.skip(f"no system python that user {uid} can run agentworld with: {probe.stderr[-200:]}")
        proc = subprocess.run([*argv, NON_ROOT, str(src / "agentworld" / "envs")], capture_output=True,
                              text=True, cwd=tmp_path, timeout=120)
    finally:
        for folder in tmp_path.glob("agentworld-*"):
            release(folder)
        os.close(lock)
    assert proc.returncode == 0, proc.stderr
    assert [line.split(" |")[0] for line in proc.stdout.splitlines()] == ["ok", "ok"]
    warnings = [line for line in proc.stderr.splitlines() if "not enforced" in line]
    assert len(warnings) == 1, proc.stderr
    for words in ("memory budget of 2 GiB", "disk budget of 1 GiB", "needs root",
                  "process budget of 256", f"uid {uid}"):
        assert words in warnings[0], warnings[0]

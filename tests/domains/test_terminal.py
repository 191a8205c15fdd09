"""Real terminal sessions and the recorder: keystroke semantics, determinism, rows, CLI (no mocks)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.domains.terminal.record import (
    Action,
    Scenario,
    format_action,
    load_scenarios,
    record_scenarios,
    trajectory_rows,
)
from agentworld.envs import (
    Sandbox,
    SandboxConfig,
    SandboxTimeoutError,
    TerminalSession,
    missing_tools,
)
from agentworld.errors import DataError
from agentworld.schema import parse_row, read_bench_jsonl

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(bool(missing_tools()) or shutil.which("tmux") is None,
                       reason=f"needs bubblewrap and tmux (missing: {missing_tools() or ['tmux']})"),
]

PROMPT = re.compile(r"^root@[0-9a-f]{12}:(\S+)# ?$")


def act(keys: str, duration: float = 0.5) -> list[dict[str, object]]:
    return [{"keystrokes": keys, "duration": duration}]


@pytest.fixture
def term():
    with TerminalSession(seed=3) as session:
        yield session


def test_initial_prompt_and_cwd(term: TerminalSession) -> None:
    assert term.initial_screen() == f"root@{term.hostname}:/app#"
    out = term.step(act("mkdir -p sub/dir && cd sub/dir\n"))
    assert out.splitlines() == [f"root@{term.hostname}:/app# mkdir -p sub/dir && cd sub/dir",
                                f"root@{term.hostname}:/app/sub/dir#"]
    out = term.step(act("pwd\n"))
    assert out.splitlines()[1] == "/app/sub/dir"


def test_ctrl_c_interrupts_and_wait_shows_command(term: TerminalSession) -> None:
    first = term.step(act("sleep 5\n", 0.3))
    assert first == f"root@{term.hostname}:/app# sleep 5"
    waited = term.step(act("", 0.5))
    assert waited == first, "a wait while a command runs shows its line again"
    out = term.step(act("C-c", 0.5))  # within the step's 0.5 s, not after the 5 s of sleep
    assert out.splitlines() == [first, "^C", f"root@{term.hostname}:/app#"]


def test_long_output_finishes_during_wait(term: TerminalSession) -> None:
    assert term.step(act("sleep 1; echo done\n", 0.2)).endswith("sleep 1; echo done")
    out = term.step(act("", 3))
    assert out.splitlines()[-2:] == ["done", f"root@{term.hostname}:/app#"]


def test_python_repl_and_cat(term: TerminalSession) -> None:
    out = term.step(act("python3 -q\n", 1.0))
    assert out.splitlines()[-1] == ">>>"
    out = term.step([{"keystrokes": "def f():\n", "duration": 0.2},
                     {"keystrokes": "    return 6 * 7\n", "duration": 0.2},
                     {"keystrokes": "\n", "duration": 0.2}])
    assert out.splitlines() == [">>> def f():", "...     return 6 * 7", "...", ">>>"]
    assert term.step(act("f()\n")).splitlines() == [">>> f()", "42", ">>>"]
    assert term.step(act("C-d")).splitlines()[-1] == f"root@{term.hostname}:/app#"
    term.step(act("cat\n", 0.3))
    term.step(act("hello\n", 0.3))
    out = term.step(act("C-d"))
    assert out.splitlines() == [f"root@{term.hostname}:/app# cat", "hello", "hello",
                                f"root@{term.hostname}:/app#"]


def test_errors_and_clear(term: TerminalSession) -> None:
    out = term.step(act("nosuchcmd\n"))
    assert "bash: nosuchcmd: command not found" in out
    out = term.step(act("cat /nope; echo rc=$?\n"))
    assert "No such file or directory" in out and "rc=1" in out
    assert term.step(act("clear\n")) == f"root@{term.hostname}:/app#"


def test_exit_and_wall_clock_limit() -> None:
    with TerminalSession(SandboxConfig(wall_clock_s=1.5)) as session:
        session.step(act("sleep 100\n", 0.2))
        time.sleep(2.0)
        with pytest.raises(SandboxTimeoutError, match="wall-clock limit"):
            session.step(act("", 0.1))
        assert not session.alive
    with TerminalSession() as session:
        session.step(act("exit\n"))
        assert not session.alive


def test_cleanup_leaves_nothing() -> None:
    session = TerminalSession(SandboxConfig(max_processes=64))
    server, box = session._server, session.sandbox
    folders = [box.root, Path(session._control_dir)]
    cgroups = list(box.budget.cgroups.values())
    session.step(act(":(){ :|:& };:\n", 1.0))
    running = box.processes()
    session.close()
    assert server.poll() is not None, "the tmux server is gone"
    assert running is None or len(running) > 10, "the fork bomb ran in the sandbox's cgroup"
    assert not any(f.exists() for f in folders), "host folders are removed"
    assert not any(c.exists() for c in cgroups), "cgroups are removed (only possible once empty)"
    assert not os.path.ismount(box.root)


TINY = [{"name": "tiny-demo", "actions": [act("echo hi > a.txt && cat a.txt\n"), act("mkdir d && cd d\n"),
                                           act("python3 -c 'print(6*7)'\n")],
         "setup": ["echo from-setup > seeded.txt"]},
        {"name": "tiny-two", "actions": [act("cat seeded.txt 2>&1 | head -n 1\n"), act("ls\n")]}]


def test_recording_is_deterministic_and_rows_valid(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(TINY))
    scenarios = load_scenarios(path)
    first = list(record_scenarios(scenarios, seed=5))
    second = list(record_scenarios(scenarios, seed=5))
    assert [[(u.action, u.observation) for u in t.turns] for t in first] == \
        [[(u.action, u.observation) for u in t.turns] for t in second]
    traj = first[0]
    assert traj.domain == "terminal" and traj.task == "terminal" and traj.id == "tiny-demo"
    assert traj.meta["source"] == "real" and traj.meta["scenario"] == "tiny-demo"
    assert traj.turns[0].action.startswith("**Current State:**\nroot@")
    assert traj.turns[0].action == format_action(scenarios[0].actions[0], traj.turns[0].action.split("\n")[1])
    assert traj.turns[1].action.startswith("**Action:**\n```json\n[\n  {\n    \"keystrokes\"")
    host = traj.meta["hostname"]
    lines = [t.observation.splitlines() for t in traj.turns]
    assert all(x[0] == "**Environment Observation:**" for x in lines)
    assert lines[0][2:] == ["hi", f"root@{host}:/app#"]
    assert lines[1][-1] == f"root@{host}:/app/d#"
    assert lines[2][2] == "42"
    assert "from-setup" not in traj.turns[0].observation
    assert second[1].turns[0].observation.splitlines()[2] == "cat: seeded.txt: No such file or directory"
    for row in trajectory_rows(traj):
        sample = parse_row(row)
        assert sample.domain == "terminal"
        assert sample.ground_truth.startswith("**Environment Observation:**\n")
    other_seed = next(iter(record_scenarios(scenarios[:1], seed=6)))
    assert other_seed.turns[0].observation != traj.turns[0].observation  # another hostname


def test_format_action_matches_contract() -> None:
    text = format_action((Action("ls -la\n", 0.5),), "root@ad092d3df69c:/app#")
    assert text == ('**Current State:**\nroot@ad092d3df69c:/app#\n\n**Action:**\n```json\n[\n  {\n'
                    '    "keystrokes": "ls -la\\n",\n    "duration": 0.5\n  }\n]\n```')


def test_load_scenarios_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"name": "ok", "actions": [act("ls\n")]},
                               {"name": "x", "actions": [[{"keystrokes": 3, "duration": 1}]]}]))
    with pytest.raises(DataError, match="scenario 1") as info:
        load_scenarios(bad)
    assert info.value.path == str(bad) and info.value.field == "actions[0][0].keystrokes"
    assert "scenario 1" in str(info.value)
    with pytest.raises(DataError, match="no such scenario"):
        load_scenarios(tmp_path / "missing.json")
    builtin = load_scenarios(Path(__file__).parents[2] / "src/agentworld/domains/terminal/scenarios")
    assert len(builtin) >= 40 and sum(len(s.actions) for s in builtin) >= 300
    assert all(isinstance(s, Scenario) for s in builtin)


def test_cli_records_and_resumes(tmp_path: Path) -> None:
    scen = tmp_path / "tiny.json"
    scen.write_text(json.dumps(TINY))
    out = tmp_path / "out.jsonl"
    runner = CliRunner()
    record = ["record", "terminal", "--scenarios", str(scen), "--out", str(out)]
    result = runner.invoke(app, [*record, "--seed", "1"])
    assert result.exit_code == 0, result.output
    rows = list(read_bench_jsonl(out))
    assert [r.id for r in rows] == ["tiny-demo-t1", "tiny-demo-t2", "tiny-demo-t3",
                                    "tiny-two-t1", "tiny-two-t2"]
    assert rows[0].total_turns == 3 and rows[0].to_row()["meta"]["source"] == "real"
    again = runner.invoke(app, record)
    assert again.exit_code == 2 and "--resume" in again.output
    resumed = runner.invoke(app, [*record, "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert len(list(read_bench_jsonl(out))) == 5


OWNER = """
import json, sys, time
from agentworld.envs.terminal import TerminalSession
s = TerminalSession()
s.step([{"keystrokes": "sleep 300 &\\n", "duration": 0.3}])
print(json.dumps([s._server.pid, str(s.sandbox.root), s._control_dir,
                  [str(c) for c in s.sandbox.budget.cgroups.values()], s.sandbox.processes()]), flush=True)
time.sleep(300)
"""


def test_owner_killed_with_sigkill_leaves_no_process_and_everything_is_swept() -> None:
    proc = subprocess.Popen([sys.executable, "-c", OWNER], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    server_pid, root, control, cgroups, running = json.loads(proc.stdout.readline())
    proc.kill()
    proc.wait()
    left = [Path(c) for c in cgroups]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (_alive(server_pid) or any(map(_cgroup_pids, left))):
        time.sleep(0.1)
    assert not _alive(server_pid), "tmux server outlived its owner"
    assert running is None or len(running) >= 2, "bash and sleep ran in the sandbox's cgroup"
    assert not any(map(_cgroup_pids, left)), "sandboxed processes outlived their owner"
    assert Path(root).exists() and Path(control).exists()
    with Sandbox():
        assert not Path(root).exists(), "the next sandbox sweeps the dead owner's sandbox folder"
        assert not Path(control).exists(), "... and its tmux folder"
        assert not any(c.exists() for c in left), "... and its cgroups"
        assert root not in Path("/proc/self/mountinfo").read_text(), "... and its tmpfs"


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "zombie" not in status


def _cgroup_pids(folder: Path) -> list[str]:
    try:
        return (folder / "cgroup.procs").read_text().split()
    except OSError:
        return []

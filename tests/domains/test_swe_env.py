"""The real SWE environment: a vendored repository in the sandbox, the coding-agent tools run inside it,
its routing, recorder and rules (real bubblewrap, real git and pytest; no mocks)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.domains.actions import format_tool_action
from agentworld.domains.base import plugin, resolve
from agentworld.domains.content import mask
from agentworld.domains.rules import Session
from agentworld.domains.swe.record import Call as SweCall
from agentworld.domains.swe.record import (
    SweScenario,
    load_swe_scenarios,
    normalise,
    record_swe,
    scenarios_dir,
)
from agentworld.domains.swe.routing import decide
from agentworld.domains.swe.rules import swe_frame_only
from agentworld.envs.sandbox import ROOT_PREFIX, Sandbox, SandboxError, missing_tools
from agentworld.envs.workspace import Workspace, WorkspaceConfig
from agentworld.errors import DataError
from agentworld.eval.rules.contract import measure_contract
from agentworld.eval.rules.scores import score_rules
from agentworld.schema import load_samples
from agentworld.sim.router import Router

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(bool(missing_tools()) or shutil.which("git") is None,
                       reason=f"needs bubblewrap and git (missing: {missing_tools() or ['git']})"),
]
INIT = "/app/inflection/__init__.py"
REFUSED = "File path must be within one of the workspace directories: /app"
runner = CliRunner()


def act(tool: str, **arguments: object) -> str:
    return format_tool_action(tool, arguments)


@pytest.fixture(scope="module")
def env():  # type: ignore[no-untyped-def]
    environment = resolve(plugin("swe").environment)(seed=3)  # type: ignore[union-attr,arg-type]
    yield environment
    environment.close()


def test_tools_answer_as_the_coding_agent_tools_do(env) -> None:  # type: ignore[no-untyped-def]
    listing = env.step(act("list_directory", path="/app"))
    assert listing.splitlines()[:4] == ["Directory listing for /app:", "[DIR] docs", "[DIR] inflection",
                                        "[DIR] inflection.egg-info"]
    assert ".git" not in listing and "setup.py" in listing.splitlines()
    head = env.step(act("read_file", absolute_path=INIT, offset=203, limit=3)).splitlines()
    assert head[:2] == ["IMPORTANT: The file content has been truncated.",
                        "Status: Showing lines 204-206 of 426 total lines."]
    assert head[-4:] == ["--- FILE CONTENT (truncated) ---", "def ordinal(number: int) -> str:", '    """',
                         "    Return the suffix that should be added to a number to denote the position"]
    assert env.step(act("replace", file_path=INIT, old_string='            3: "rd",\n',
                        new_string='            3: "th",\n')) == (
        "Successfully modified file: /app/inflection/__init__.py (1 replacements).")
    diff = env.step(act("run_shell_command", command="git diff --stat", is_background=False))
    assert diff.splitlines() == [
        "Command: git diff --stat", "Directory: (root)", "Output:  inflection/__init__.py | 2 +-",
        " 1 file changed, 1 insertion(+), 1 deletion(-)", "Error: (none)", "Exit Code: 0", "Signal: (none)",
        "Background PIDs: (none)", "Process Group PGID: 3"]
    assert env.step(act("replace", file_path=INIT, old_string="word", new_string="term")) == (
        f"Failed to edit, expected 1 occurrence but found 47 for old_string in file: {INIT}")
    found = env.step(act("search_file_content", pattern='3: "TH"', include="*.py"))
    assert found.splitlines() == ['Found 1 match for pattern "3: "TH"" in path "." (filter: "*.py"):', "---",
                                  "File: inflection/__init__.py", 'L232: 3: "th",', "---"]
    assert env.step(act("write_file", file_path="/app/notes/todo.txt", content="x\n")) == (
        "Successfully created and wrote to new file: /app/notes/todo.txt.")
    globbed = env.step(act("glob", pattern="**/*.txt")).splitlines()
    assert globbed[0] == 'Found 4 file(s) matching "**/*.txt" within /app, sorted by modification time ' \
                         "(newest first):"
    assert globbed[1] == "/app/notes/todo.txt", "files changed in the session come first"
    todo = env.step(act("todo_write", todos=[{"id": "1", "content": "Fix ordinal", "status": "in_progress"}]))
    assert '[{"id":"1","content":"Fix ordinal","status":"in_progress"}]. Continue on' in todo
    huge = env.step(act("run_shell_command", command="yes abcdefghi | head -c 300000", is_background=False))
    assert "\n... [99999 more characters truncated]\nError: (none)" in huge
    server = env.step(act("run_shell_command", command="echo started; sleep 30",
                          is_background=True)).splitlines()
    assert server[2:7] == ["Output: started", "Error: (none)", "Exit Code: 0", "Signal: (none)",
                           "Background PIDs: 3"], "a background command answers at once with its pid"
    missing = env.step(act("run_shell_command", command="nope-cmd", is_background=False)).splitlines()
    assert missing[2] == "Output: bash: line 1: nope-cmd: command not found"
    assert missing[4] == "Exit Code: 127"
    assert env.step("ls -la").startswith("Error: the action is not a tool call")
    assert env.step(act("web_fetch", url="https://example.com")).startswith('Tool "web_fetch" not found')


def test_every_tool_is_confined_to_the_workspace(env, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    shell = env.step(act("run_shell_command", is_background=False, command=(
        f"ln -s /etc/hostname /app/out-link; ln -s /tmp /app/tmp-link; ln -s {tmp_path} /app/host-link; "
        f"cat {secret}; echo pwned > {secret}; echo x > {tmp_path}/new.txt; touch /usr/pwned")))
    assert "No such file or directory" in shell and "Exit Code: 1" in shell
    attempts = [
        act("read_file", absolute_path="/etc/passwd"), act("read_file", absolute_path="/app/../etc/passwd"),
        act("read_file", absolute_path="/app/out-link"), act("read_file", absolute_path=str(secret)),
        act("read_file", absolute_path=f"/app/host-link/{secret.name}"),
        act("write_file", file_path="/tmp/escape.txt", content="x"),
        act("write_file", file_path="/app/../root/escape.txt", content="x"),
        act("write_file", file_path="/app/tmp-link/escape.txt", content="x"),
        act("write_file", file_path=f"/app/host-link/{secret.name}", content="pwned"),
        act("replace", file_path="/etc/hostname", old_string="a", new_string="b"),
        act("replace", file_path="/app/out-link", old_string="a", new_string="b"),
        act("list_directory", path="/"), act("list_directory", path="/app/.."),
        act("list_directory", path="/app/tmp-link"),
        act("glob", pattern="*", path="/etc"), act("glob", pattern="*", path="../"),
        act("search_file_content", pattern="root", path="/etc"),
        act("search_file_content", pattern="secret", path="host-link"),
    ]
    for action in attempts:
        answer = env.step(action)
        assert answer in (REFUSED, REFUSED.replace("File path", "Path")), (action, answer)
    relative = env.step(act("read_file", absolute_path="setup.py"))
    assert relative.startswith("File path must be absolute, but was relative: setup.py.")
    assert secret.read_text() == "host secret"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret.txt"]
    assert not Path("/usr/pwned").exists() and not Path("/tmp/escape.txt").exists()
    assert "host-link" in env.step(act("list_directory", path="/app")), "symlinks are listed, not followed"


def test_files_the_tools_write_are_the_sandbox_s_own() -> None:
    with Workspace(config=WorkspaceConfig(git=False)) as ws:  # an empty workspace, no archive
        assert ws.call("write_file", {"file_path": "/app/a.txt", "content": "inside\n"}).startswith(
            "Successfully created")
        assert (ws.sandbox.app_dir / "a.txt").read_text() == "inside\n"
        root = ws.sandbox.root
    assert not root.exists(), "closing the workspace removes the sandbox's host folder"
    assert ws.closed
    with pytest.raises(SandboxError, match="the workspace is closed"):
        ws.call("glob", {"pattern": "*"})


@pytest.mark.parametrize(("action", "route", "side_effects"), [
    (act("read_file", absolute_path=INIT), "real", False),
    (act("list_directory", path="/app"), "real", False),
    (act("glob", pattern="**/*.py"), "real", False),
    (act("search_file_content", pattern="def"), "real", False),
    (act("todo_write", todos=[]), "real", False),
    (act("write_file", file_path="/app/x.py", content=""), "real", True),
    (act("replace", file_path=INIT, old_string="a", new_string="b"), "real", True),
    (act("run_shell_command", command="python3 -m http.server", is_background=True), "model", True),
    (act("web_fetch", url="https://example.com"), "model", False),
    (act("save_memory", fact="x"), "model", True),
    ("ls -la", "model", False),
])
def test_routing_decides_per_tool(action: str, route: str, side_effects: bool) -> None:
    decision = decide(action)
    assert (decision.route, decision.side_effects) == (route, side_effects), decision.reason


@pytest.mark.parametrize(("command", "route", "side_effects"), [
    ("git diff && python3 -m pytest -q", "real", False),
    ("pip install requests", "model", True),
    ("curl -s https://example.com", "model", False),
    ("git clone https://x/y.git", "model", True),
])
def test_shell_calls_follow_the_terminal_s_rules(command: str, route: str, side_effects: bool) -> None:
    decision = decide(act("run_shell_command", command=command, is_background=False))
    assert (decision.route, decision.side_effects) == (route, side_effects), decision.reason


def test_the_generic_router_runs_swe_steps_for_real_until_a_model_step_changes_the_world() -> None:
    router = Router("rules", domain="swe", seed=2)
    try:
        read = act("read_file", absolute_path="/app/setup.py")
        assert router.decide("swe", read).route == "real"
        assert "setup(" in asyncio.run(router.execute(read))
        status = act("run_shell_command", command="git status --short && echo clean", is_background=False)
        assert router.decide("swe", status).route == "real"
        assert "Output: clean\n" in asyncio.run(router.execute(status))
        assert router.decide("swe", act("run_shell_command", command="pip install x", is_background=False),
                             ).route == "model"
        assert router.diverged
        assert router.decide("swe", read).reason == "an earlier model step changed the world"
        cmake = act("run_shell_command", command="cmake --build .", is_background=False)
        assert decide(cmake, prefer="cost").route == "model", "prefer=cost runs only well-known commands"
    finally:
        router.close()


def test_plugin_names_every_part() -> None:
    swe = plugin("swe")
    assert swe is not None and swe.display == "SWE"
    assert resolve(swe.routing) is decide  # type: ignore[arg-type]
    assert swe.data_file(swe.corpus) is not None and swe.data_file(swe.heldout_scenarios) is not None
    assert resolve(swe.recorder).options.model_fields["scenarios"].description  # type: ignore[arg-type]


def test_environment_close_is_idempotent_and_cleans_up() -> None:
    environment = resolve(plugin("swe").environment)(seed=1, repo="six")  # type: ignore[union-attr,arg-type]
    first = environment.initial_observation()
    assert first.startswith("Working directory: /app (git repository of six 1.16.0")
    assert "├───six.py" in first and "└───test_six.py" in first
    root = environment.workspace.sandbox.root
    environment.close()
    environment.close()
    assert not root.exists()


def test_a_recorded_first_action_picks_its_repository() -> None:
    rows = load_samples([plugin("swe").data_file("corpus.jsonl")])  # type: ignore[union-attr,list-item]
    first = next(r for r in rows if r.id == "six-explore-t1")
    environment = resolve(plugin("swe").environment)(seed=0)  # type: ignore[union-attr,arg-type]
    try:
        assert environment.step(first.action) == first.ground_truth.split("\n", 1)[1]
        assert "six.py" in environment.step(act("glob", pattern="*.py"))
    finally:
        environment.close()
    with pytest.raises(SandboxError, match="the SWE environment is closed"):
        environment.step(first.action)


HELDOUT = load_swe_scenarios(scenarios_dir() / "heldout.jsonl")
SCENARIOS = [SweScenario("det-a", "inflection", HELDOUT[1].calls),
             SweScenario("det-b", "six", HELDOUT[2].calls)]


def test_recording_twice_gives_the_same_observations_but_runtime_metadata() -> None:
    with Workspace(config=WorkspaceConfig(git=False)) as ws:
        if "Exit Code: 0" not in ws.call("run_shell_command", {"command": "python3 -c 'import pytest'"}):
            pytest.skip("the OS's python3 has no pytest (apt-get install python3-pytest)")
    first = [record_swe(s, seed=5, normalised=False) for s in SCENARIOS]
    second = [record_swe(s, seed=5, normalised=False) for s in SCENARIOS]
    pairs = [(a, b) for t1, t2 in zip(first, second, strict=True)
             for a, b in zip(t1.turns, t2.turns, strict=True)]
    assert len(pairs) == 12 and all(a.action == b.action for a, b in pairs)
    same = sum(mask(a.observation).text == mask(b.observation).text for a, b in pairs)
    assert same / len(pairs) >= 0.95, [(a.observation, b.observation) for a, b in pairs
                                       if mask(a.observation).text != mask(b.observation).text]
    assert all(normalise(a.observation) == normalise(b.observation) for a, b in pairs), (
        "apart from test durations, the two recordings are the same")
    assert first[0].turns[0].action.startswith("**Current State:**\nWorking directory: /app")
    assert "4 passed, 451 deselected in" in first[0].turns[4].observation


def test_normalise_fixes_test_durations_only() -> None:
    text = ("....\n455 passed in 1.47s\n== 1 failed, 2 passed, 3 deselected in 0.12s ==\n"
            "Ran 3 tests in 0.002s\nin 2.5s\n455 tests collected in 0.39s")
    assert normalise(text) == ("....\n455 passed in 0.50s\n== 1 failed, 2 passed, 3 deselected in 0.50s ==\n"
                               "Ran 3 tests in 0.050s\nin 2.5s\n455 tests collected in 0.50s")


def test_normalise_fixes_a_summary_on_the_output_line() -> None:
    """``pytest -q | tail -1``: the summary is the output's first line, on the ``Output:`` line; its
    duration changed between recordings until the rewrite allowed that prefix (issue 21 §4)."""
    result = ("Command: python3 -m pytest -q | tail -1\nDirectory: (root)\nOutput: 455 passed in 0.67s\n"
              "Error: (none)\nExit Code: 0")
    assert normalise(result) == result.replace("0.67s", "0.50s")
    assert normalise("Output: Ran 3 tests in 0.002s") == "Output: Ran 3 tests in 0.050s"
    assert normalise("Output: 455 passed in 0.67s") == normalise("Output: 455 passed in 1.02s")


def test_a_first_line_summary_records_the_same_twice() -> None:
    with Workspace(config=WorkspaceConfig(git=False)) as ws:
        if "Exit Code: 0" not in ws.call("run_shell_command", {"command": "python3 -c 'import pytest'"}):
            pytest.skip("the OS's python3 has no pytest (apt-get install python3-pytest)")
    tail = SweScenario("tail-1", "inflection", (SweCall("run_shell_command", {
        "command": "python3 -m pytest -q test_inflection.py | tail -1", "is_background": False}),))
    first, second = (record_swe(tail, seed=1).turns[0].observation for _ in range(2))
    assert "\nOutput: 455 passed in 0.50s\n" in first and first == second


KILL_SCENARIO = {"name": "sleeper", "repo": "six", "calls": [
    {"tool": "run_shell_command", "arguments": {"command": "sleep 317", "is_background": False}}]}


def _sleepers() -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x00317\x00":
                found.append(int(pid))
        except OSError:
            continue
    return found


def test_sigkill_of_the_recorder_leaves_no_process_and_no_folder(tmp_path: Path) -> None:
    scenarios = tmp_path / "s.jsonl"
    scenarios.write_text(json.dumps(KILL_SCENARIO) + "\n")
    command = [sys.executable, "-m", "agentworld", "record", "swe", "--scenarios", str(scenarios),
               "--out", str(tmp_path / "out.jsonl")]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not _sleepers() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    folders = list(Path(tempfile.gettempdir()).glob(f"{ROOT_PREFIX}{proc.pid}-*"))
    assert _sleepers() and folders, "the scenario's command runs in a sandbox of the recorder"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while _sleepers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _sleepers(), "the sandboxed command outlived the recorder"
    with Sandbox():
        assert not any(f.exists() for f in folders), "the next sandbox sweeps the dead recorder's folder"


def test_record_command_writes_rows_and_keeps_an_existing_file(tmp_path: Path) -> None:
    scenarios = tmp_path / "s.jsonl"
    scenarios.write_text(json.dumps({"name": "tiny", "repo": "six", "calls": [
        {"tool": "glob", "arguments": {"pattern": "*.py"}},
        {"tool": "read_file", "arguments": {"absolute_path": "/app/setup.cfg"}}]}) + "\n")
    out = tmp_path / "rows.jsonl"
    result = runner.invoke(app, ["record", "swe", "--scenarios", str(scenarios), "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = load_samples([out])
    assert [r.id for r in rows] == ["tiny-t1", "tiny-t2"] and {r.domain for r in rows} == {"swe"}
    assert rows[0].ground_truth.splitlines()[1] == ('Found 3 file(s) matching "*.py" within /app, sorted by '
                                                    "modification time (newest first):")
    again = runner.invoke(app, ["record", "swe", "--scenarios", str(scenarios), "--out", str(out)])
    assert again.exit_code == 2 and "pass --resume to continue it" in again.output
    resumed = runner.invoke(app, ["record", "swe", "--scenarios", str(scenarios), "--out", str(out),
                                  "--resume"])
    assert resumed.exit_code == 0 and len(load_samples([out])) == 2


def test_bad_scenario_files_name_the_line_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"name": "ok", "repo": "six", "calls": [{"tool": "glob", "arguments": {}}]}\n'
                   '{"name": "x", "repo": "left-pad", "calls": []}\n')
    with pytest.raises(DataError, match=r"bad.jsonl:2, sample .x., field .repo.: repo must be one of "
                                        r"inflection, six, toolz"):
        load_swe_scenarios(bad)


def test_rules_score_content_apart_from_the_frame() -> None:
    rows = load_samples([plugin("swe").data_file("corpus.jsonl")])  # type: ignore[union-attr,list-item]
    shell = next(r for r in rows if "Command: git diff\n" in r.ground_truth and "@@" in r.ground_truth)
    frame = swe_frame_only(shell.ground_truth, Session.of("swe", shell))
    assert frame.startswith("Command: git diff\nDirectory: (root)\nError: (none)") and "@@" not in frame
    assert score_rules("swe", frame, shell.ground_truth, shell).overall < 5
    wrong_hunk = re.sub(r"@@ -(\d+)", lambda m: f"@@ -{int(m.group(1)) + 7}", shell.ground_truth)
    score = score_rules("swe", wrong_hunk, shell.ground_truth, shell)
    assert score.details["structure"]["hunks"] < 1 and score.overall < 100
    failed = shell.ground_truth.replace("Exit Code: 0", "Exit Code: 1")
    assert not score_rules("swe", failed, shell.ground_truth, shell).verified, "the exit code must match"
    view = next(r for r in rows if r.ground_truth.count("\nL") >= 3)  # a search result: numbered lines
    shifted = re.sub(r"\nL(\d+):", lambda m: f"\nL{int(m.group(1)) + 1}:", view.ground_truth)
    moved = score_rules("swe", shifted, view.ground_truth, view)
    assert moved.details["structure"]["line_numbers"] == 0 and not moved.verified
    assert score_rules("swe", view.ground_truth, view.ground_truth, view).overall == 100


def test_shipped_corpus_holds_the_rule_tier_contract() -> None:
    samples = load_samples([plugin("swe").data_file("corpus.jsonl")])  # type: ignore[union-attr,list-item]
    report = measure_contract(samples)
    assert report.samples >= 200 and report.with_content >= report.samples - 5
    assert report.violations() == []
    assert report.retrieval is not None and report.retrieval > report.baselines["repeat_previous"]


def test_a_shell_tool_result_is_an_error_by_its_exit_code_not_its_error_field() -> None:
    from agentworld.domains.failures import is_error

    ok = ("Command: ls\nDirectory: (root)\nOutput: setup.py\nError: (none)\nExit Code: 0\nSignal: (none)\n"
          "Background PIDs: (none)\nProcess Group PGID: 3")
    failed = ok.replace("Exit Code: 0", "Exit Code: 127")
    assert not is_error(ok, "swe") and is_error(failed, "swe")
    assert is_error("Error: File not found: /app/x.py", "swe")
    assert is_error(ok, "terminal")  # a plain shell has no such field: the common pattern stands there

"""``agentworld eval closed-loop`` on the terminal: the same agent in the real sandbox and in the simulator.

The acceptance runs: the mock server replaying the ground truth recorded from the real episodes
(under the simulator's own messages) gives full outcome agreement and no divergence under every arm;
the retrieval baseline (offline) gives the measured gap quoted in the README. Everything real runs
for real (bash in the sandbox, the mock over HTTP on 127.0.0.1, the CLI in a subprocess).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentworld.envs.sandbox import missing_tools
from agentworld.eval.closedloop_agent import candidate_agents
from agentworld.eval.closedloop_tasks import load_tasks
from agentworld.eval.closedloop_truth import record_real, truth_rows
from agentworld.io import atomic_write_jsonl
from agentworld.serve.mock_server import MockConfig, run_mock_server

TASKS = Path(__file__).resolve().parents[1] / "examples" / "closed_loop" / "terminal_tasks.jsonl"
real_sandbox = pytest.mark.skipif(
    bool(missing_tools()) or shutil.which("tmux") is None,
    reason=f"needs bubblewrap and tmux (missing: {missing_tools() or ['tmux']})")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    return subprocess.run([sys.executable, "-m", "agentworld", "eval", "closed-loop", *args], env=env,
                          capture_output=True, text=True, timeout=900)


def subset(tmp_path: Path, names: tuple[str, ...]) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(line + "\n" for line in TASKS.read_text().splitlines()
                            if json.loads(line)["id"] in names))
    return path


def report(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "report.json").read_text())
    return data


@real_sandbox
def test_the_mock_replaying_ground_truth_agrees_on_every_outcome_and_never_diverges(tmp_path: Path) -> None:
    tasks_file = subset(tmp_path, ("cd-missing", "not-a-repo", "wrong-name"))
    tasks = load_tasks(tasks_file)
    reals = record_real(tasks, candidate_agents)
    assert [len(reals[t.id].steps) for t in tasks] == [2, 2, 2]  # the futile candidate fails for real
    data = tmp_path / "truth.jsonl"
    atomic_write_jsonl(data, truth_rows(tasks, reals, candidate_agents))
    out = tmp_path / "run"
    with run_mock_server(MockConfig(data=[data])) as url:
        done = cli("--tasks", str(tasks_file), "--scripted-agent", "--model", "mock", "--model-base-url", url,
                   "--judge-base-url", url, "--judge-model", "judge", "--out", str(out))
    assert done.returncode == 0, done.stderr
    summary = report(out)["summary"]["terminal"]
    assert list(summary) == ["bare", "ledger", "router", "ledger+router"]
    for arm, line in summary.items():
        assert line["outcome_agreement"] == 100.0 and line["diverged"] == 0, arm
        assert line["rule_fidelity"] == 100.0 and line["exact"] == 100.0 and line["real_success"] == 3, arm
        assert line["rubric_fidelity"] == 100.0, arm
    assert "terminal  bare" in done.stdout and "100.0" in done.stdout
    page = (out / "report.html").read_text()
    assert "Closed-loop sim-to-real gap" in page and "no divergence" in page and "differs" not in page

"""``agentworld eval closed-loop`` on the terminal: the same agent in the real sandbox and in the simulator.

The acceptance runs: the mock server replaying the ground truth recorded from the real episodes
(under the simulator's own messages) gives full outcome agreement and no divergence under every arm;
the retrieval baseline (offline) gives the measured gap quoted in docs/results.md. Everything real runs
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
from agentworld.eval.closedloop.agent import candidate_agents
from agentworld.eval.closedloop.tasks import load_tasks
from agentworld.eval.closedloop.truth import record_real, truth_rows
from agentworld.io import atomic_write_jsonl
from agentworld.serve.mock_server import MockConfig, run_mock_server

TASKS = Path(__file__).resolve().parents[3] / "examples" / "closed_loop" / "terminal_tasks.jsonl"
real_sandbox = pytest.mark.skipif(
    bool(missing_tools()) or shutil.which("tmux") is None,
    reason=f"needs bubblewrap and tmux (missing: {missing_tools() or ['tmux']})")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3] / "src")}
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


RETRIEVAL = {  # measured: the finding in docs/results.md (scripted agent, 7 terminal tasks, seed 0)
    "bare": {"outcome_agreement": 0.0, "diverged": 6, "rule_fidelity": 12.5, "real_routed_share": 0.0},
    "ledger": {"outcome_agreement": 0.0, "diverged": 6, "rule_fidelity": 12.5, "real_routed_share": 0.0},
    "router": {"outcome_agreement": 71.4, "diverged": 2, "rule_fidelity": 85.71, "real_routed_share": 83.3},
    "ledger+router": {"outcome_agreement": 71.4, "diverged": 2, "rule_fidelity": 85.71,
                      "real_routed_share": 83.3},
}


def journal_keys(out: Path) -> list[tuple[str, str, str]]:
    rows = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines() if line.strip()]
    return [(r["kind"], r["task"], r.get("arm", "")) for r in rows]


@real_sandbox
def test_the_retrieval_model_shows_the_measured_gap_and_a_killed_run_resumes_without_repeating(
        tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ("--tasks", str(TASKS), "--scripted-agent", "--model", "retrieval", "--out", str(out))
    done = cli(*args)
    assert done.returncode == 0, done.stderr
    first = report(out)
    for arm, expected in RETRIEVAL.items():
        line = first["summary"]["terminal"][arm]
        assert {k: line[k] for k in expected} == expected, arm
        assert line["tasks"] == 7 and line["real_success"] == 7
    assert first["summary"]["terminal"]["bare"]["first_divergence_mean"] == 2.0
    keys = journal_keys(out)
    assert len(keys) == len(set(keys)) == 7 + 7 * 4
    # a kill mid-run leaves the journal cut short, its last line torn; the report not yet written
    lines = (out / "episodes.jsonl").read_text().splitlines()
    (out / "episodes.jsonl").write_text("\n".join(lines[:-3]) + "\n" + lines[-3][:40])
    (out / "report.json").unlink()
    again = cli(*args)
    assert again.returncode == 0, again.stderr
    resumed = journal_keys(out)
    assert len(resumed) == len(set(resumed)) == 7 + 7 * 4
    assert resumed[:len(lines) - 3] == keys[:len(lines) - 3]
    assert report(out)["summary"] == first["summary"]


@real_sandbox
def test_a_chat_agent_sees_the_simulated_observation_and_a_wrong_one_flips_the_outcome(
        tmp_path: Path) -> None:
    from agentworld.eval.closedloop.command import run_closed_loop
    from agentworld.eval.closedloop.config import ClosedLoopConfig
    from agentworld.models.base import ChatRequest
    from agentworld.models.scripted import ScriptedBackend

    def agent(request: ChatRequest) -> str:
        users = sum(m.role == "user" for m in request.messages)
        return '[{"keystrokes": "cat README.md\\n", "duration": 1.0}]' if users == 1 else "DONE"

    def world(request: ChatRequest) -> str:
        return ("<predicted_observation>\nroot@host:/app# cat README.md\ncat: README.md: No such file or "
                "directory\nroot@host:/app#\n</predicted_observation>")

    tasks = subset(tmp_path, ("wrong-name",))
    config = ClosedLoopConfig(tasks=tasks, agent_base_url="http://127.0.0.1:9/v1", agent_model="scripted",
                              model="scripted", arms=["bare"], out=tmp_path / "run")
    result = run_closed_loop(config, agent=ScriptedBackend(default=agent),
                             model=ScriptedBackend(default=world))
    (row,) = result["tasks"]
    assert row["first_divergence"] is None and (row["real_steps"], row["sim_steps"]) == (1, 1)
    assert row["real_success"] and not row["sim_success"] and not row["agree"]
    assert "No such file" in row["steps"][0]["simulated"] and "Run make test" in row["steps"][0]["real"]
    assert row["steps"][0]["rule"] < 50
    assert result["summary"]["terminal"]["bare"]["outcome_agreement"] == 0.0


def test_a_bad_task_line_is_one_error_naming_file_line_task_and_field(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(TASKS.read_text().splitlines()[0] + "\n"
                     + json.dumps({"id": "x", "domain": "terminal", "goal": "g", "expect": "e",
                                   "candidates": [{"nope": 1}]}) + "\n")
    done = cli("--tasks", str(tasks), "--scripted-agent", "--model", "retrieval",
               "--out", str(tmp_path / "o"))
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "tasks.jsonl:2, sample 'x', field 'candidates[0]'" in line and "keystrokes" in line
    assert not (tmp_path / "o").exists()


def test_the_agent_options_and_arms_are_checked_together(tmp_path: Path) -> None:
    base = ("--tasks", str(TASKS), "--model", "retrieval", "--out", str(tmp_path / "o"))
    both = cli(*base, "--scripted-agent", "--agent-base-url", "http://127.0.0.1:9/v1", "--agent-model", "a")
    assert both.returncode == 2 and "give exactly one of --agent-base-url" in both.stderr
    arm = cli(*base, "--scripted-agent", "--arms", "bare,oracle")
    assert arm.returncode == 2 and "unknown arm 'oracle'" in arm.stderr


def test_a_foreign_folder_is_refused_untouched(tmp_path: Path) -> None:
    out = tmp_path / "o"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    done = cli("--tasks", str(TASKS), "--scripted-agent", "--model", "retrieval", "--out", str(out))
    assert done.returncode == 2 and "not an agentworld eval closed-loop folder" in done.stderr
    assert [p.name for p in out.iterdir()] == ["mine.txt"] and (out / "mine.txt").read_text() == "keep"


def test_a_domain_known_only_from_its_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The notes domain (``tests/example_domain``): its environment and error text come from its plugin
    and the task; a world model that replays the notebook agrees, one that answers OK to all does not."""
    monkeypatch.setenv("AGENTWORLD_DOMAIN_PACKAGES", "example_domain")
    from agentworld.eval.closedloop.command import run_closed_loop
    from agentworld.eval.closedloop.config import ClosedLoopConfig
    from agentworld.models.base import ChatRequest
    from agentworld.models.scripted import ScriptedBackend
    from example_domain.env import Notebook

    def faithful(request: ChatRequest) -> str:
        notebook = Notebook()
        shown = [notebook.step(m.content) for m in request.messages if m.role == "user"]
        return f"<predicted_observation>\n{shown[-1]}\n</predicted_observation>"

    tasks = tmp_path / "notes.jsonl"
    tasks.write_text(json.dumps({"id": "fruit", "domain": "notes", "goal": "Show the fruit.",
                                 "setup": ["set fruit pear"], "candidates": ["get fruits", "get fruit"],
                                 "errors": [r"^\(no such key"], "check": "list",
                                 "expect": "fruit = pear"}) + "\n")

    def run(name: str, model: ScriptedBackend) -> dict[str, Any]:
        config = ClosedLoopConfig(tasks=tasks, scripted_agent=True, model="scripted", arms=["bare", "router"],
                                  out=tmp_path / name)
        return run_closed_loop(config, model=model)

    good = run("faithful", ScriptedBackend(default=faithful))["summary"]["notes"]
    assert all(line["outcome_agreement"] == 100.0 and line["diverged"] == 0 and line["rule_fidelity"] == 100.0
               for line in good.values())
    assert good["router"]["real_routed_share"] == 100.0 and good["bare"]["real_routed_share"] == 0.0
    ok = "<predicted_observation>\nOK\n</predicted_observation>"
    bad = run("always-ok", ScriptedBackend(default=lambda request: ok))
    (bare, routed) = bad["tasks"]
    assert bare["first_divergence"] == 2 and not bare["agree"]
    assert (bare["real_steps"], bare["sim_steps"]) == (2, 1)
    assert [s["real"] for s in bare["steps"]] == ["(no such key: fruits)", "fruit = pear"]
    assert routed["first_divergence"] is None and routed["agree"]


def test_first_divergence_and_the_page_escapes_what_the_episodes_showed() -> None:
    from agentworld.eval.closedloop.episode import Step, Trajectory
    from agentworld.eval.closedloop.render import render_html
    from agentworld.eval.closedloop.score import first_divergence, summarize

    def episode(*actions: str) -> Trajectory:
        steps = [Step(a, a, "<script>alert(1)</script>") for a in actions]
        return Trajectory("", [], steps, None, True, "done")

    assert first_divergence(episode("a", "b"), episode("a", "b")) is None
    assert first_divergence(episode("a", "b"), episode("a", "c")) == 2
    assert first_divergence(episode("a"), episode("a", "b")) == 2
    assert first_divergence(episode(), episode("a")) == 1
    step = {"turn": "1", "action": "<b>x</b>", "simulated": "<script>alert(1)</script>", "real": "ok",
            "rule": 0.0, "exact": False, "rubric": None}
    row = {"task": "<i>t</i>", "domain": "terminal", "arm": "bare", "first_divergence": None,
           "real_success": True, "sim_success": True, "agree": True, "fidelity": 0.0, "rubric": None,
           "real_steps": 1, "sim_steps": 1, "real_routed": 0, "sim_ended": "done", "steps": [step]}
    page = render_html({"agent": "a", "model": "m", "judge": None, "seed": 0, "tasks_finished": 1,
                        "tasks_planned": 1, "summary": summarize([row]), "tasks": [row]})
    assert "<script>" not in page and "&lt;script&gt;" in page and "<i>t</i>" not in page

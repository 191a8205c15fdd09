"""``eval agent-predictions --model NAME``: an agent imagining with a world model, offline, real bash.

The world model is the real retrieval baseline over the shipped corpus; every action runs in the
terminal's real sandboxed shell and every prediction is scored by the real rule tier.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentworld.corpus import corpus_path
from agentworld.domains.base import plugin
from agentworld.envs import missing_tools
from agentworld.eval.agentpred.command import select_tasks
from agentworld.eval.agentpred.config import AgentPredConfig
from agentworld.eval.agentpred.imagine import imagination
from agentworld.schema import trajectory_id as trajectory_of

needs_sandbox = pytest.mark.skipif(bool(missing_tools()) or shutil.which("tmux") is None, reason=(
    f"needs bubblewrap and tmux (missing: {missing_tools() or ['tmux']})"))


def _cli(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentworld", "eval", "agent-predictions", "--out", str(out),
                           "--no-progress", *extra], capture_output=True, text=True, env=dict(os.environ),
                          timeout=600)


def _sources(config: AgentPredConfig) -> set[str]:
    backend = imagination(config, select_tasks(config))
    return {trajectory_of(t.source) for t in backend.index.transitions}  # type: ignore[attr-defined]


def _named_like(task_ids: list[str], out: Path) -> Path:
    """Rows of shipped recordings renamed to the tasks' ids: a corpus holding recordings *named* like the
    tasks (leaving out is by name; the real-recording case is the sandbox test below)."""
    rows = [json.loads(line) for line in corpus_path("terminal").read_text().splitlines()[:len(task_ids)]]
    out.write_text("".join(json.dumps({**row, "id": f"{task}-t{row['turn_idx']}"}) + "\n"
                           for task, row in zip(task_ids, rows, strict=True)))
    return out


def test_retrieval_imagination_leaves_the_tasks_recordings_out(tmp_path: Path) -> None:
    config = AgentPredConfig(model="retrieval", domains=["terminal"], out=tmp_path / "run")
    held_out = {t.id for t in select_tasks(config)}
    assert held_out
    assert not held_out & _sources(config), "the shipped corpus holds no recording of a held-out task"
    named = _named_like(sorted(held_out), tmp_path / "named.jsonl")
    config = config.model_copy(update={"model_corpus": [corpus_path("terminal"), named]})
    assert held_out <= _sources(config.model_copy(update={"keep_heldout": True}))
    assert not held_out & _sources(config)


def _record_first_task(out: Path) -> Path:
    from agentworld.domains.terminal.record import load_scenarios, record_to_jsonl

    terminal = plugin("terminal")
    assert terminal is not None
    first = load_scenarios(terminal.data_file(terminal.heldout_scenarios) or "")[0]
    assert record_to_jsonl([first], out).rows > 0
    return out


@pytest.mark.sandbox
@needs_sandbox
def test_offline_cli_imagines_with_retrieval_on_real_executions(tmp_path: Path) -> None:
    recorded = _record_first_task(tmp_path / "first_task.jsonl")  # the task --limit 1 runs
    corpus = ("--model-corpus", str(corpus_path("terminal")), "--model-corpus", str(recorded))
    default = _cli(tmp_path / "default", "--model", "retrieval", *corpus, "--limit", "1", "--json")
    assert default.returncode == 0, default.stderr
    kept = _cli(tmp_path / "kept", "--model", "retrieval", *corpus, "--keep-heldout", "--limit", "1",
                "--json")
    assert kept.returncode == 0, kept.stderr
    low, high = (json.loads(r.stdout)["domains"]["terminal"] for r in (default, kept))
    assert low["tasks"] == high["tasks"] == 1 and low["steps"] == high["steps"] > 0
    assert high["rule_overall"] == 100.0, "with its own recordings the index recalls the session"
    assert low["rule_overall"] < 50, "the held-out task's recordings must be left out by default"
    rows = [json.loads(line) for line in (tmp_path / "default" / "steps.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "step" in r]
    assert steps and all(r["parsed"] and r["real"] for r in steps)
    config = json.loads((tmp_path / "default" / "config.json").read_text())
    assert config["model"] == "retrieval" and config["keep_heldout"] is False


@pytest.mark.parametrize(("args", "message"), [
    ((), "give exactly one of --agent-base-url"),
    (("--model", "retrieval", "--agent-base-url", "http://127.0.0.1:9/v1", "--agent-model", "a"),
     "give exactly one of --agent-base-url"),
    (("--model", "scripted", "--keep-heldout"), "--keep-heldout applies to --model retrieval only"),
    (("--agent-base-url", "http://127.0.0.1:9/v1"), "--agent-base-url needs --agent-model"),
])
def test_agent_endpoint_xor_imagination_is_one_red_line(tmp_path: Path, args: tuple[str, ...],
                                                         message: str) -> None:
    result = _cli(tmp_path / "out", *args)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr
    assert not (tmp_path / "out").exists()


def test_imagining_refuses_goal_tasks_before_anything_runs(tmp_path: Path) -> None:
    tasks = tmp_path / "goal.jsonl"
    tasks.write_text(json.dumps({"id": "g", "domain": "terminal", "goal": "print a word"}) + "\n")
    result = _cli(tmp_path / "out", "--model", "retrieval", "--tasks", str(tasks))
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "only predicts fixed actions" in result.stderr
    assert not (tmp_path / "out").exists()

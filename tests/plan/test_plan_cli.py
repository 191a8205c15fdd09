"""``agentworld plan``: the ranked table and ``--json`` against a real HTTP world model; one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentworld.envs.sandbox import container_id
from serving import chat_server

PROMPT = f"root@{container_id(0)}:/app#"


def agentworld(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    return subprocess.run([sys.executable, "-m", "agentworld", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def world(path: str, body: dict[str, Any], headers: Any) -> str:
    """A terminal world model that knows `rg` is not installed, and repeats the history it was shown."""
    messages = body["messages"]
    command = messages[-1]["content"].split('"keystrokes": "')[-1].split("\\n")[0]
    output = f"bash: {command.split()[0]}: command not found" if command.startswith("rg") else \
        f"2 (after {(len(messages) - 2) // 2} earlier turns)"
    return f"<predicted_observation>\n{PROMPT} {command}\n{output}\n{PROMPT}\n</predicted_observation>"


def test_plan_prints_the_candidates_ranked_with_their_imagined_screens(tmp_path: Path) -> None:
    history = tmp_path / "history.json"
    history.write_text(json.dumps([{"action": [{"keystrokes": "ls\n"}], "observation": "notes.md"}]))
    with chat_server(world) as url:
        base = ["plan", "--model-base-url", f"{url}/v1", "--model", "m", "--history", str(history),
                "--candidate", "rg -c TODO notes.md", "--candidate", "grep -c TODO notes.md"]
        shown = agentworld(*base, "--samples", "2")
        as_json = agentworld(*base, "--json")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == ("2 candidates, horizon 1, 2 sample(s) each, scorer rule; best first (#N: position as "
                        "given)")
    assert lines[1] == "#2  score 1.00  grep -c TODO notes.md"
    assert "    │ 2 (after 1 earlier turns)" in lines  # imagined after the replayed history
    assert "#1  score 0.00  rg -c TODO notes.md" in lines
    assert "    fail (step 1 matches 'command not found')" in lines
    plan = json.loads(as_json.stdout)
    assert [c["index"] for c in plan["ranked"]] == [1, 0] and plan["scorer"] == "rule"
    assert plan["ranked"][1]["samples"][0]["steps"][0]["observation"].endswith(
        f"bash: rg: command not found\n{PROMPT}")


def test_plan_without_candidates_or_agent_is_one_red_line() -> None:
    result = agentworld("plan", "--model", "retrieval")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == ("error: no candidate actions: give --candidate (repeat it), or an agent "
                                     "to propose them (--agent-base-url and --agent-model)")


def test_a_bad_history_item_is_named(tmp_path: Path) -> None:
    history = tmp_path / "h.json"
    history.write_text(json.dumps([{"action": "ls", "observation": "x"}, {"action": "pwd"}]))
    result = agentworld("plan", "--model", "retrieval", "--candidate", "ls", "--history", str(history))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert f"--history {history}: item 1: expected an object with 'action' and a string" in result.stderr


def test_plan_with_a_judge_scores_its_verdicts() -> None:
    def answer(path: str, body: dict[str, Any], headers: Any) -> str:
        if path.startswith("/judge"):
            user = body["messages"][-1]["content"]
            return "Verdict: failure" if "command not found" in user else "It ran.\nVerdict: on track"
        return world(path, body, headers)

    with chat_server(answer) as url:
        result = agentworld("plan", "--model-base-url", f"{url}/v1", "--model", "m", "--judge-base-url",
                            f"{url}/judge/v1", "--judge-model", "j", "--task", "count the TODO lines",
                            "--candidate", "rg -c TODO notes.md", "--candidate", "grep -c TODO notes.md",
                            "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["scorer"] == "judge"
    assert [(c["index"], c["score"], c["samples"][0]["verdict"]["label"]) for c in plan["ranked"]] == [
        (1, 0.5, "on track"), (0, 0.0, "failure")]


def test_plan_judge_scorer_without_a_judge_is_one_red_line() -> None:
    result = agentworld("plan", "--model", "retrieval", "--candidate", "ls", "--scorer", "judge")
    assert result.returncode == 2
    assert result.stderr.strip() == ("error: --scorer judge needs --judge-model (and --judge-base-url for a "
                                     "served judge)")

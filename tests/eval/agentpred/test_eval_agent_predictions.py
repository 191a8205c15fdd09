"""``agentworld eval agent-predictions``: a scripted agent over HTTP, real bash in the real sandbox.

Only the agent is scripted (a stub OpenAI-compatible endpoint); every action runs in the terminal's
real sandboxed shell and every prediction is scored by the real rule tier.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agentworld.envs import missing_tools
from agentworld.eval.agentpred.prompt import NEXT_ACTION, read_history
from agentworld.schema import Message
from serving import chat_server

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(bool(missing_tools()) or shutil.which("tmux") is None,
                       reason=f"needs bubblewrap and tmux (missing: {missing_tools() or ['tmux']})"),
]


def _keys(text: str) -> list[dict[str, Any]]:
    return [{"keystrokes": text, "duration": 0.3}]


TASKS = [
    {"id": "greet", "domain": "terminal", "setup": [_keys("mkdir -p box && cd box\n")],
     "steps": [_keys("echo alpha-one\n"), _keys("printf 'x\\ny\\n' > f.txt\n"), _keys("cat f.txt\n"),
               _keys("cat > n.txt << 'EOF'\nhi there\nEOF\n")]},
    {"id": "count", "domain": "terminal",
     "steps": [_keys("seq 3\n"), _keys("echo $((6 * 7))\n"), _keys("echo done-two\n")]},
]
STEPS = sum(len(t["steps"]) for t in TASKS)
WRONG = "<predicted_observation>\nbash: nothing: command not found\n</predicted_observation>"


def _next_action(body: dict[str, Any]) -> str:
    sections = read_history([Message(**m) for m in body["messages"]])
    return [text for label, text in sections if label == NEXT_ACTION][-1]


def _argv(url: str, tasks: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "agentworld", "eval", "agent-predictions", "--agent-base-url", url + "/v1",
            "--agent-model", "scripted-agent", "--tasks", str(tasks), "--out", str(out)]


def _cli(tmp_path: Path, url: str, out: Path, *extra: str, env: dict[str, str] | None = None,
         tasks: Path | None = None) -> subprocess.CompletedProcess[str]:
    if tasks is None:
        tasks = tmp_path / "tasks.jsonl"
        tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    return subprocess.run([*_argv(url, tasks, out), "--max-retries", "0", *extra], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=600)


def _rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines() if line.strip()]


def test_perfect_agent_scores_100_a_wrong_one_low_with_baselines(tmp_path: Path) -> None:
    with chat_server(lambda path, body, headers: WRONG) as url:
        wrong = _cli(tmp_path, url, tmp_path / "wrong", "--json")
    assert wrong.returncode == 0, wrong.stderr
    low = json.loads(wrong.stdout)["domains"]["terminal"]
    assert low["steps"] == STEPS and low["tasks"] == 2
    assert low["rule_overall"] < 20 and low["exact_rate"] == 0
    assert set(low["baselines"]) == {"empty", "repeat_previous"}
    real = {row["action"]: row["real"] for row in _rows(tmp_path / "wrong") if "step" in row}
    assert any("alpha-one" in text and "42" not in text for text in real.values())
    assert any("\n42\n" in text for text in real.values())
    heredoc = next(r for r in _rows(tmp_path / "wrong") if "step" in r and "n.txt" in r["action"])
    assert "> hi there" in heredoc["real"]
    assert heredoc["baselines"]["empty"]["exact"], "the heredoc's echo is the typed command, not output"

    def oracle(path: str, body: dict[str, Any], headers: Any) -> str:
        return f"<predicted_observation>\n{real[_next_action(body)]}\n</predicted_observation>"

    secret = "sk-agentpred-secret-0123456789"
    with chat_server(oracle) as url:
        perfect = _cli(tmp_path, url, tmp_path / "perfect", "--json",
                       env={"AGENTWORLD_AGENT_API_KEY": secret})
    assert perfect.returncode == 0, perfect.stderr
    summary = json.loads(perfect.stdout)
    top = summary["domains"]["terminal"]
    assert top["rule_overall"] == 100.0 and top["exact_rate"] == 100.0 and top["unparsed"] == 0
    assert top["baselines"]["empty"]["rule_overall"] < 50
    assert summary["ended"] == {"steps": 2}
    assert json.loads((tmp_path / "perfect" / "summary.json").read_text()) == summary
    for file in (tmp_path / "perfect").iterdir():
        assert secret not in file.read_text(), file


def test_killed_run_resumes_without_asking_again(tmp_path: Path) -> None:
    answered, asked, release = [], [], threading.Event()

    def stalls_on_third(path: str, body: dict[str, Any], headers: Any) -> str:
        asked.append(1)
        if len(asked) > 2:
            release.wait(120)
        answered.append(1)
        return WRONG

    out = tmp_path / "run"
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    with chat_server(stalls_on_third) as url:
        proc = subprocess.Popen([*_argv(url, tasks, out), "--concurrency", "1"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while len(asked) < 3:
            assert proc.poll() is None and time.monotonic() < deadline, "the run never asked a third time"
            time.sleep(0.05)
        proc.kill()
        proc.wait()
        release.set()
    before = [r for r in _rows(out) if "step" in r]
    assert len(before) == 2 and not any("closed" in r for r in _rows(out))

    counted: list[int] = []

    def counting(path: str, body: dict[str, Any], headers: Any) -> str:
        counted.append(1)
        return WRONG

    with chat_server(counting) as url:
        resumed = _cli(tmp_path, url, out, "--concurrency", "1", tasks=tasks)
        assert resumed.returncode == 0, resumed.stderr
        assert len(counted) == STEPS - 2
        steps = [r for r in _rows(out) if "step" in r]
        assert len(steps) == STEPS and steps[:2] == before
        again = _cli(tmp_path, url, out, tasks=tasks)
        changed = _cli(tmp_path, url, out, "--agent-temperature", "0.7", tasks=tasks)
    assert again.returncode == 0, again.stderr
    assert len(counted) == STEPS - 2
    assert changed.returncode == 2 and "agent_temperature: 0.0 -> 0.7" in changed.stderr


def test_agent_chosen_actions_run_for_real(tmp_path: Path) -> None:
    def chooser(path: str, body: dict[str, Any], headers: Any) -> str:
        if len([m for m in body["messages"] if m["role"] == "assistant"]) >= 2:
            return "DONE"
        return '{"keystrokes": "echo chosen-by-agent\\n"}\n<predicted_observation>\nchosen-by-agent\n' \
               "</predicted_observation>"

    tasks = tmp_path / "goal.jsonl"
    task = {"id": "g", "domain": "terminal", "goal": "print a word", "max_steps": 5}
    tasks.write_text(json.dumps(task) + "\n")
    with chat_server(chooser) as url:
        done = _cli(tmp_path, url, tmp_path / "goal", tasks=tasks)
    assert done.returncode == 0, done.stderr
    rows = _rows(tmp_path / "goal")
    steps = [r for r in rows if "step" in r]
    assert len(steps) == 2 and all("chosen-by-agent" in r["real"] for r in steps)
    assert steps[0]["rule"]["overall"] > 0
    assert rows[-1]["closed"] == "done"


@pytest.mark.parametrize(("line", "field"), [
    ({"id": "b", "domain": "terminal", "steps": [[{"keystrokes": 5}]]}, "steps[0]"),
    ({"id": "b", "domain": "nowhere", "steps": [_keys("ls\n")]}, "domain"),
    ({"id": "b", "domain": "terminal"}, "steps"),
])
def test_bad_tasks_file_is_one_red_line(tmp_path: Path, line: dict[str, Any], field: str) -> None:
    tasks = tmp_path / "bad.jsonl"
    tasks.write_text(json.dumps(TASKS[0]) + "\n" + json.dumps(line) + "\n")
    with chat_server(lambda path, body, headers: WRONG) as url:
        result = _cli(tmp_path, url, tmp_path / "out", tasks=tasks)
    assert result.returncode == 2
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1 and f"{tasks}:2" in message and f"field {field!r}" in message
    assert not (tmp_path / "out").exists()


def test_foreign_folder_is_refused_untouched(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with chat_server(lambda path, body, headers: WRONG) as url:
        result = _cli(tmp_path, url, out)
    assert result.returncode == 2 and "not an agentworld eval agent-predictions folder" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_an_action_the_domain_rejects_closes_the_task_for_good(tmp_path: Path) -> None:
    asked: list[int] = []

    def bad_action(path: str, body: dict[str, Any], headers: Any) -> str:
        asked.append(1)
        return '{"keystrokes": 5}\n<predicted_observation>\n5\n</predicted_observation>'

    tasks = tmp_path / "goal.jsonl"
    tasks.write_text(json.dumps({"id": "g", "domain": "terminal", "goal": "anything"}) + "\n")
    with chat_server(bad_action) as url:
        first = _cli(tmp_path, url, tmp_path / "out", tasks=tasks)
        again = _cli(tmp_path, url, tmp_path / "out", tasks=tasks)
    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    closing = _rows(tmp_path / "out")[-1]
    assert closing["closed"] == "agent_error" and "keystrokes" in closing["error"]
    assert len(asked) == 1

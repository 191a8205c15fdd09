"""``eval agent-predictions`` in a domain it does not know by name: the test suite's notes domain.

The notes domain (``tests/example_domain``) is found only through ``AGENTWORLD_DOMAIN_PACKAGES``; its
real environment (an in-memory notebook) runs every action, so the command works through the plugin's
``environment`` and ``actions`` alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentworld.eval.agentpred.prompt import NEXT_ACTION, read_history
from agentworld.schema import Message
from serving import chat_server

ROOT = Path(__file__).parents[3]
REAL = {"get colour": "colour = blue", "set fruit pear": "OK", "list": "colour = blue\nfruit = pear",
        "get nothing": "(no such key: nothing)"}


def _run(tmp_path: Path, answer: Any, out: str) -> subprocess.CompletedProcess[str]:
    tasks = tmp_path / "notes.jsonl"
    tasks.write_text(json.dumps({"id": "n", "domain": "notes", "setup": ["set colour blue"],
                                 "steps": list(REAL)}) + "\n")
    env = {**os.environ, "AGENTWORLD_DOMAIN_PACKAGES": "example_domain",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    with chat_server(answer) as url:
        argv = ["eval", "agent-predictions", "--agent-base-url", url + "/v1", "--agent-model", "m",
                "--tasks", str(tasks), "--out", str(tmp_path / out), "--json"]
        return subprocess.run([sys.executable, "-m", "agentworld", *argv], env=env, capture_output=True,
                              text=True, timeout=120)


def test_a_domain_known_only_from_its_plugin(tmp_path: Path) -> None:
    seen: list[list[tuple[str, str]]] = []

    def oracle(path: str, body: dict[str, Any], headers: Any) -> str:
        sections = read_history([Message(**m) for m in body["messages"]])
        seen.append(sections)
        action = [text for label, text in sections if label == NEXT_ACTION][-1]
        return f"<predicted_observation>\n{REAL[action]}\n</predicted_observation>"

    perfect = _run(tmp_path, oracle, "perfect")
    assert perfect.returncode == 0, perfect.stderr
    line = json.loads(perfect.stdout)["domains"]["notes"]
    assert line["steps"] == 4 and line["rule_overall"] == 100.0 and line["exact_rate"] == 100.0
    assert seen[0][:3] == [("### Observation", "(empty)"),
                           ("### Setup action (already run)", "set colour blue"), ("### Observation", "OK")]
    assert ("### Observation", "colour = blue") in seen[1]

    always_ok = "<predicted_observation>\nOK\n</predicted_observation>"
    wrong = _run(tmp_path, lambda path, body, headers: always_ok, "wrong")
    assert wrong.returncode == 0, wrong.stderr
    low = json.loads(wrong.stdout)["domains"]["notes"]
    assert low["rule_overall"] < 50 and low["exact_rate"] == 25.0

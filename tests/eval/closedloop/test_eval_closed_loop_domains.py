"""``agentworld eval closed-loop`` beyond the terminal: MCP, search and SWE, each in its real environment.

Per domain, a few tasks of ``examples/closed_loop/<domain>_tasks.jsonl`` run with the scripted agent:
the mock server replaying the ground truth recorded from the real episodes must agree on every outcome
and never diverge, under a plain arm and under the ledger with the router; the retrieval baseline on
search gives the measured gap docs/results.md quotes. Real servers (MCP over stdio), a real BM25 index over
the installed Python documentation, real tools in the sandboxed SWE workspace; the mock over HTTP.
Everything runs in this process, so the search index is built once.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentworld.envs.sandbox import missing_tools
from agentworld.envs.search_index import default_docs_dir
from agentworld.eval.closedloop.agent import candidate_agents
from agentworld.eval.closedloop.command import run_closed_loop
from agentworld.eval.closedloop.config import ClosedLoopConfig
from agentworld.eval.closedloop.tasks import load_tasks
from agentworld.eval.closedloop.truth import record_real, truth_rows
from agentworld.io import atomic_write_jsonl
from agentworld.serve.mock_server import MockConfig, run_mock_server

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "closed_loop"
ARMS = ("bare", "ledger+router")


def _mcp_missing() -> str | None:
    from agentworld.domains.mcp.servers import preset

    return next((why for name in ("filesystem", "time") if (why := preset(name).missing())), None)


def _search_missing() -> str | None:
    if importlib.util.find_spec("bm25s") is None:
        return "bm25s is not installed (pip install 'agentworld[search]')"
    return None if default_docs_dir() is not None else "python3-doc is not installed (install.sh has it)"


def _swe_missing() -> str | None:
    missing = missing_tools() or ([] if shutil.which("git") else ["git"])
    return f"needs bubblewrap and git (missing: {missing})" if missing else None


def needs(domain: str) -> pytest.MarkDecorator:
    why = {"mcp": _mcp_missing, "search": _search_missing, "swe": _swe_missing}[domain]()
    return pytest.mark.skipif(why is not None, reason=why or "")


def subset(tmp_path: Path, domain: str, names: tuple[str, ...] = ()) -> Path:
    lines = (EXAMPLES / f"{domain}_tasks.jsonl").read_text().splitlines()
    path = tmp_path / f"{domain}.jsonl"
    path.write_text("".join(line + "\n" for line in lines if not names or json.loads(line)["id"] in names))
    return path


def run(tasks: Path, out: Path, **model: Any) -> dict[str, Any]:
    config = ClosedLoopConfig(tasks=tasks, scripted_agent=True, arms=list(ARMS), out=out, **model)
    return run_closed_loop(config)


def run_cli(tasks: Path, out: Path, url: str) -> dict[str, Any]:
    """The run as a user starts it; nothing on stderr (a backend left open makes aiohttp warn there)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3] / "src")}
    args = ["--tasks", str(tasks), "--scripted-agent", "--arms", ",".join(ARMS), "--model", "mock",
            "--model-base-url", url, "--judge-model", "judge", "--judge-base-url", url, "--out", str(out)]
    done = subprocess.run([sys.executable, "-m", "agentworld", "eval", "closed-loop", *args], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


@pytest.mark.parametrize(("domain", "names", "cli"), [
    pytest.param("mcp", ("fs-wrong-case", "time-bad-zone"), False, marks=needs("mcp")),
    pytest.param("search", ("no-results", "memory-wrong-key", "update-missing-key"), False,
                 marks=needs("search")),
    pytest.param("swe", ("readme-wrong-name", "replace-wrong-case"), True, marks=needs("swe")),
])
def test_the_mock_replaying_ground_truth_agrees_on_every_outcome_and_never_diverges(
        tmp_path: Path, domain: str, names: tuple[str, ...], cli: bool) -> None:
    tasks_file = subset(tmp_path, domain, names)
    tasks = load_tasks(tasks_file)
    reals = record_real(tasks, candidate_agents)
    # for real, the first candidate fails (the agent retries) and the second meets the check
    assert [(len(reals[t.id].steps), reals[t.id].success) for t in tasks] == [(2, True)] * len(tasks)
    rows = truth_rows(tasks, reals, candidate_agents, arms=ARMS)
    # the simulator starts from the real first screen (SWE: the repository tree; MCP, search: none)
    assert [bool(reals[t.id].initial) for t in tasks] == [domain == "swe"] * len(tasks)
    for task in tasks:
        shown = f"# Initial state\n{reals[task.id].initial}"
        prompts = [r["system_str"] for r in rows if r["id"].startswith(f"cl-{task.id}-")]
        assert prompts and all((shown in p) == (domain == "swe") for p in prompts), task.id
        tools = [tool["name"] for tool in task.spec.get("tools", [])]  # the task's spec reaches the prompt
        assert bool(tools) == (domain == "mcp") and all(f'"name": "{n}"' in p for n in tools for p in prompts)
    data = tmp_path / "truth.jsonl"
    atomic_write_jsonl(data, rows)
    with run_mock_server(MockConfig(data=[data])) as url:
        report = (run_cli(tasks_file, tmp_path / "run", url) if cli
                  else run(tasks_file, tmp_path / "run", model="mock", model_base_url=url))
    summary = report["summary"][domain]
    assert list(summary) == list(ARMS)
    for arm, line in summary.items():
        assert (line["outcome_agreement"], line["diverged"]) == (100.0, 0), arm
        assert (line["rule_fidelity"], line["exact"]) == (100.0, 100.0), arm
        assert line["real_success"] == line["sim_success"] == len(tasks), arm
        assert line["rubric_fidelity"] == (100.0 if cli else None), arm  # the mock as judge
    assert summary["bare"]["real_routed_share"] == 0.0 and summary["ledger+router"]["real_routed_share"] > 0
    page = (tmp_path / "run" / "report.html").read_text()
    assert "no divergence" in page and "differs" not in page


SEARCH_RETRIEVAL = {  # measured: docs/results.md's search row (scripted agent, 5 search tasks, seed 0)
    "bare": {"outcome_agreement": 40.0, "diverged": 4, "rule_fidelity": 4.92, "real_routed_share": 0.0},
    "ledger+router": {"outcome_agreement": 100.0, "diverged": 0, "rule_fidelity": 100.0,
                      "real_routed_share": 100.0},
}


@needs("search")
def test_the_retrieval_model_on_search_answers_from_search_rows_and_shows_the_measured_gap(
        tmp_path: Path) -> None:
    report = run(subset(tmp_path, "search"), tmp_path / "run", model="retrieval")
    for arm, expected in SEARCH_RETRIEVAL.items():
        line = report["summary"]["search"][arm]
        assert {k: line[k] for k in expected} == expected, arm
        assert line["tasks"] == line["real_success"] == 5, arm
    bare = {row["task"]: row for row in report["tasks"] if row["arm"] == "bare"}
    # the retrieved answers are search results and memory texts, never an MCP server's (the bug fixed)
    shown = [step["simulated"] for row in bare.values() for step in row["steps"]]
    assert not any('"entities"' in text or "Commit history" in text for text in shown)
    assert bare["no-results"]["steps"][0]["simulated"].startswith("[1] https://docs.python.org/3/")
    assert bare["memory-wrong-key"]["first_divergence"] is None and not bare["memory-wrong-key"]["agree"]


def test_the_truth_command_writes_the_mock_rows_and_refuses_to_overwrite(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``agentworld eval closed-loop-truth`` on the notes domain (``tests/example_domain``)."""
    monkeypatch.setenv("AGENTWORLD_DOMAIN_PACKAGES", "example_domain")
    from typer.testing import CliRunner

    from agentworld.cli import app

    def truth(*args: str) -> Any:
        return CliRunner().invoke(app, ["eval", "closed-loop-truth", *args])

    task = {"id": "fruit", "domain": "notes", "goal": "Show the fruit.", "setup": ["set fruit pear"],
            "candidates": ["get fruits", "get fruit"], "errors": [r"^\(no such key"], "check": "list",
            "expect": "fruit = pear"}
    tasks, out = tmp_path / "notes.jsonl", tmp_path / "truth.jsonl"
    tasks.write_text(json.dumps(task) + "\n")
    done = truth("--tasks", str(tasks), "--out", str(out))
    assert done.exit_code == 0, done.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # per arm: the two agent steps and the check (the setup's observation is given, never asked)
    assert [r["response"][-1] for r in rows if r["id"].startswith("cl-fruit-bare-")] == [
        "(no such key: fruits)", "fruit = pear", "fruit = pear"]
    # the router arms run every notes step for real: the world model is never asked there
    assert sorted(r["id"].split("-")[2] for r in rows) == ["bare"] * 3 + ["ledger"] * 3
    assert done.output.strip() == f"wrote {len(rows)} rows to {out}"
    before = out.read_text()
    again = truth("--tasks", str(tasks), "--out", str(out))
    assert again.exit_code == 2 and "exists: give a new file" in again.output and out.read_text() == before
    foreign = tmp_path / "notes.txt"
    foreign.write_text("my notes\n")
    refused = truth("--tasks", str(tasks), "--out", str(foreign))
    assert refused.exit_code == 2 and "carries no agentworld mark" in refused.output
    tasks.write_text(json.dumps({k: v for k, v in task.items() if k != "candidates"}) + "\n")
    bare = truth("--tasks", str(tasks), "--out", str(tmp_path / "new.jsonl"))
    assert bare.exit_code == 2 and "task 'fruit' lists no candidates" in bare.output
    assert len(bare.output.strip().splitlines()) == 1 and not (tmp_path / "new.jsonl").exists()


def test_a_bad_spec_is_one_error_naming_the_task_and_field(tmp_path: Path) -> None:
    from agentworld.errors import DataError

    line = json.loads((EXAMPLES / "mcp_tasks.jsonl").read_text().splitlines()[0])
    tasks = tmp_path / "tasks.jsonl"
    for spec, field, message in ((["x"], "spec", "spec must be an object"),
                                 ({"domain": "web"}, "spec.domain", "takes name, tools, controls"),
                                 ({"controls": {"facts": "x"}}, "spec.controls.facts", "valid list")):
        tasks.write_text(json.dumps({**line, "spec": spec}) + "\n")
        where = rf"tasks.jsonl:1, sample 'fs-wrong-case', field '{field}'"
        with pytest.raises(DataError, match=rf"{where}.*{message}"):
            load_tasks(tasks)

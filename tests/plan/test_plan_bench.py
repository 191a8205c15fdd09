"""The planner benchmark's logic on two futile-action tasks, executed for real in the terminal sandbox.

The mock server replays the ground truth recorded from real runs of every candidate: faithful, the
planner never runs the futile action and solves both; fully corrupted, it loses that advantage.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from agentworld.domains.terminal.futile import TASKS
from agentworld.endpoints import build_backend
from agentworld.envs.sandbox import missing_tools
from agentworld.io import atomic_write_jsonl
from agentworld.plan.bench import record_truth, run_task, summarize, truth_rows
from agentworld.schema import load_samples
from agentworld.serve.mock_server import MockConfig, run_mock_server

pytestmark = pytest.mark.skipif(bool(missing_tools()) or shutil.which("tmux") is None,
                                reason=f"needs bubblewrap and tmux (missing: {missing_tools() or ['tmux']})")

CHOSEN = [t for t in TASKS if t.name in ("cd-missing", "follow-forever")]


def test_every_task_has_a_futile_first_candidate_and_a_working_one() -> None:
    assert 8 <= len(TASKS) <= 12 and len({t.name for t in TASKS}) == len(TASKS)
    assert all(not t.candidates[0].works and any(c.works for c in t.candidates) for t in TASKS)


def test_the_planner_avoids_the_futile_actions_only_with_a_faithful_world_model(tmp_path: Path) -> None:
    screens = {task.name: record_truth(task) for task in CHOSEN}
    assert "No such file or directory" in screens["cd-missing"][0]
    assert not screens["follow-forever"][0].rstrip().endswith("#")  # tail -f never gave the prompt back
    data = tmp_path / "truth.jsonl"
    atomic_write_jsonl(data, [row for task in CHOSEN for row in truth_rows(task, screens[task.name])])
    assert [s.ground_truth for s in load_samples([data])] == [s for t in CHOSEN for s in screens[t.name]]

    async def arm(name: str, url: str | None) -> dict[str, int]:
        backend = build_backend("mock", url) if url else None
        outcomes = [await run_task(task, name, backend) for task in CHOSEN]
        if backend is not None:
            await backend.aclose()
        return summarize(outcomes)

    with run_mock_server(MockConfig(data=[data])) as faithful, \
            run_mock_server(MockConfig(data=[data], corruption_rate=1.0)) as corrupted:
        alone = asyncio.run(arm("no planner", None))
        truth = asyncio.run(arm("faithful", faithful))
        wrong = asyncio.run(arm("corrupted", corrupted))
    assert alone == {"tasks": 2, "solved": 0, "real_steps": 2, "wasted": 2, "futile": 2}
    assert truth == {"tasks": 2, "solved": 2, "real_steps": 2, "wasted": 0, "futile": 0}
    assert wrong["futile"] > truth["futile"] and wrong["solved"] < truth["solved"]


def test_the_tasks_come_from_the_domain_plugin_and_a_domain_without_them_is_named() -> None:
    from agentworld.errors import AgentWorldError
    from agentworld.plan.bench import plan_suite

    assert plan_suite("terminal").tasks == TASKS
    with pytest.raises(AgentWorldError, match=r"domain .search. ships no futile-action tasks; these do: "
                                              r"terminal"):
        plan_suite("search")

"""The README's main job end to end: record real sessions, simulate (held-out retrieval), score, report."""

from __future__ import annotations

import json
import shutil
from importlib.resources import files
from pathlib import Path

import pytest
from rich.console import Console

from agentworld.demo import DemoConfig, run_demo
from agentworld.eval.baselines import BASELINES, skill
from agentworld.io import read_journal

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("tmux") is None,
                       reason="needs bubblewrap and tmux (run ./install.sh)"),
]


def test_demo_records_simulates_scores_and_reports(tmp_path: Path) -> None:
    config = DemoConfig(out=str(tmp_path / "demo"), domains=["terminal"])
    console = Console(record=True, width=140)
    report = run_demo(config, console=console)
    text = console.export_text()
    assert report.is_file() and "Rule tier" in text
    rows = list(read_journal(tmp_path / "demo" / "data" / "terminal_test.jsonl"))
    heldout = json.loads((Path(str(files("agentworld.domains.terminal"))) / "heldout.json").read_text())
    assert {r["id"].rpartition("-t")[0] for r in rows} == set(heldout)
    assert all(r["meta"]["source"] == "real" for r in rows)
    preds = list(read_journal(report.parent / "predictions.jsonl"))
    assert len(preds) == len(rows) and all(p["source"] == "retrieval" for p in preds)
    # Held out: no prediction may come from the very trajectory being predicted.
    own = {r["id"].rpartition("-t")[0] for r in rows}
    neighbours = [str(p["meta"]["neighbour"]).partition("#")[0] for p in preds]
    assert all(neighbours) and not any(n.rpartition("-t")[0] in own for n in neighbours), neighbours
    scores = json.loads((report.parent / "scores.json").read_text())
    rules = scores["rules"]["terminal"]
    assert 0 < rules["overall"] < 100
    tier = scores["rule_tier"]["domains"]["terminal"]
    assert tier["overall"] == pytest.approx(rules["overall"], abs=0.01) and tier["n"] == len(rows)
    assert tier["skill_over_frame_only"] == skill(tier["overall"], tier["baselines"]["frame_only"])
    assert all(name in text for name in (*BASELINES, "skill_over_frame_only"))
    assert "frame_only" in report.read_text("utf-8")
    run_demo(config, console=Console(file=open("/dev/null", "w")))  # noqa: SIM115 - resumes, records nothing
    assert len(list(read_journal(tmp_path / "demo" / "data" / "terminal_test.jsonl"))) == len(rows)

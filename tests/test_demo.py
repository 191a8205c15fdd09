"""The quick start's job end to end: record real sessions, simulate (held-out retrieval), score, report."""

from __future__ import annotations

import json
import shutil
from importlib.resources import files
from pathlib import Path

import pytest
from rich.console import Console

from agentworld.demo import DemoConfig, run_demo
from agentworld.eval.rules.baselines import BASELINES, skill
from agentworld.eval.rules.contract import measure_contract
from agentworld.io import read_journal
from agentworld.schema import load_samples

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("tmux") is None,
                       reason="needs bubblewrap and tmux (run ./install.sh)"),
]


REAL = ("terminal", "mcp", "search", "swe", "web")


def test_demo_records_simulates_scores_and_reports_every_real_domain(
        demo_run: tuple[Path, Path, str]) -> None:
    out, report, text = demo_run  # run_demo(DemoConfig(out=...)) with a recording console: conftest.py
    config = DemoConfig(out=str(out))
    assert report.is_file() and "Rule tier" in text
    data = out / "data"
    assert sorted(p.name for p in data.glob("*_test.jsonl")) == sorted(f"{d}_test.jsonl" for d in REAL)
    rows = [r for d in REAL for r in read_journal(data / f"{d}_test.jsonl")]
    heldout = json.loads((Path(str(files("agentworld.domains.terminal"))) / "heldout.json").read_text())
    terminal = {r["id"].rpartition("-t")[0] for r in rows if r["task"].endswith("terminal")}
    assert terminal == {s["name"] for s in heldout}
    assert all(r["meta"]["source"] == "real" for r in rows if r["task"].endswith("terminal"))
    preds = list(read_journal(report.parent / "predictions.jsonl"))
    assert len(preds) == len(rows) and all(p["source"] == "retrieval" for p in preds)
    # Held out: no prediction may come from the very trajectory being predicted.
    own = {r["id"].rpartition("-t")[0] for r in rows}
    neighbours = [str(p["meta"]["neighbour"]).partition("#")[0] for p in preds]
    assert all(neighbours) and not any(n.rpartition("-t")[0] in own for n in neighbours), neighbours
    scores = json.loads((report.parent / "scores.json").read_text())
    for domain in REAL:  # one row per real domain, each above what knowing nothing scores
        n = sum(1 for r in rows if r["task"].split("/")[-1] == domain)
        rules = scores["rules"][domain]
        tier = scores["rule_tier"]["domains"][domain]
        assert n > 0 and tier["n"] == n and 0 < rules["overall"] < 100, domain
        assert tier["overall"] == pytest.approx(rules["overall"], abs=0.01)
        assert tier["skill_over_frame_only"] == skill(tier["overall"], tier["baselines"]["frame_only"])
        assert tier["strongest"] == max(tier["baselines"].values())
        assert tier["skill_over_strongest"] == skill(tier["overall"], tier["strongest"])
        base = tier["baselines"]
        assert tier["overall"] > max(base["empty"], base["repeat_previous"]), (domain, tier)
        assert f"\n{domain} " in text
    columns = (*BASELINES, "strongest", "skill_over_frame_only", "skill_over_strongest")
    assert all(name in text for name in columns)
    html = report.read_text("utf-8")
    assert "frame_only" in html and "skill over strongest" in html
    for domain in REAL:  # recordings no corpus holds: the verdict accepts them and rejects one change
        fresh = load_samples([data / f"{domain}_test.jsonl"])
        contract = measure_contract(fresh, retrieval=False)
        assert contract.truth_verified >= 95.0, domain
        changed = contract.verified_when_changed
        assert all(accepted <= 0.1 * n for accepted, n in changed.values()), (domain, changed)
        assert sum(n for _, n in changed.values()) >= 3 * len(fresh), (domain, changed)
    run_demo(config, console=Console(file=open("/dev/null", "w")))  # noqa: SIM115 - resumes, records nothing
    assert sum(len(list(read_journal(data / f"{d}_test.jsonl"))) for d in REAL) == len(rows)


def test_demo_refuses_a_domain_without_a_real_environment(tmp_path: Path) -> None:
    from agentworld.errors import AgentWorldError

    with pytest.raises(AgentWorldError, match=r"--domains: no real environment for android; real domains: "):
        run_demo(DemoConfig(out=str(tmp_path / "demo"), domains=["android"]))
    assert not (tmp_path / "demo").exists()

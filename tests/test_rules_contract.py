"""The rule tier's contract on real recordings: the truth near 100, answers that know nothing near 0,
retrieval above the trivial predictors, and scores falling with the mock server's corruption rate."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld.corpus import corpus_path
from agentworld.eval.contract import ContractReport, measure_contract
from agentworld.schema import load_samples

TAU = Path(__file__).resolve().parents[2] / "shared" / "data" / "tau_bench_airline_gpt4o_dev.json"


def test_terminal_corpus_holds_the_contract() -> None:
    report = measure_contract(load_samples([corpus_path("terminal")]))
    assert report.samples == 374 and 0 < report.with_content < report.samples
    assert report.violations(trivial_all_max=25.0, empty_max=5.0) == []
    assert report.retrieval is not None and report.retrieval > report.baselines["frame_only"]


@pytest.mark.skipif(not TAU.exists(), reason="shared/data (tau-bench logs) is not beside the repo")
def test_mcp_tau_bench_holds_the_contract() -> None:
    from agentworld.data.ingest import ingest

    samples = [s for t in ingest(TAU, "openai-chat") for s in t.samples()]
    report = measure_contract(samples)
    assert report.domain == "mcp" and report.with_content > 0
    assert report.violations() == []


def test_violations_name_what_breaks() -> None:
    broken = ContractReport(domain="x", samples=10, with_content=8, truth=97.0,
                            baselines={"frame_only": 30.0, "empty": 6.0, "repeat_previous": 50.0},
                            baselines_with_content={"frame_only": 25.0, "empty": 1.0,
                                                    "repeat_previous": 40.0},
                            retrieval=45.0, corruption=((0.0, 97.0), (0.5, 98.0), (1.0, 60.0)))
    found = broken.violations(trivial_all_max=25.0, empty_max=5.0)
    assert found == ["truth 97.00 < 99.0", "frame_only 25.00 > 20.0 on turns with content",
                     "frame_only 30.00 > 25.0 on all turns", "empty 6.00 > 5.0",
                     "repeat_previous 50.00 >= retrieval 45.00",
                     "not falling with corruption: ((0.0, 97.0), (0.5, 98.0), (1.0, 60.0))"]


def test_one_domain_at_a_time() -> None:
    rows = load_samples([corpus_path("terminal")])[:2]
    mixed = [rows[0], rows[1].model_copy(update={"task": "mcp"})]
    with pytest.raises(ValueError, match=r"one domain at a time, not \['mcp', 'terminal'\]"):
        measure_contract(mixed, retrieval=False)

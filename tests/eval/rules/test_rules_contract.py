"""The rule tier's contract on real recordings: the truth near 100, answers that know nothing near 0,
retrieval above the trivial predictors, and scores falling with the mock server's corruption rate."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld.corpus import corpus_path
from agentworld.eval.rules.contract import ContractReport, measure_contract
from agentworld.schema import BenchSample, load_samples

TAU = Path(__file__).resolve().parents[4] / "shared" / "data" / "tau_bench_airline_gpt4o_dev.json"


def test_terminal_corpus_holds_the_contract() -> None:
    """Frame-only reads the real prompt (of the previous screen, or of a first turn's current state), so
    it is the whole answer on the third of turns that print nothing (``cd``, ``export``): about 26 on all
    turns, 0 on turns with content. Leave-one-out retrieval rarely knows what a command prints, and on
    all turns it stays below frame-only (about 19 against 26): a weakness of retrieval, measured and
    shown as negative skill, not of the scale — so here it need only beat repeating the last screen."""
    report = measure_contract(load_samples([corpus_path("terminal")]))
    assert report.samples == 374 and 0 < report.with_content < report.samples
    assert report.violations(trivial_all_max=30.0, empty_max=5.0, retrieval_beats=("repeat_previous",)) == []
    assert report.retrieval is not None and report.retrieval < report.baselines["frame_only"]
    assert report.truth_verified == 100.0
    assert all(changed > 100 for _, changed in report.verified_when_changed.values())


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
                            retrieval=45.0, retrieval_with_content=38.0,
                            corruption=((0.0, 97.0), (0.5, 98.0), (1.0, 60.0)), truth_verified=90.0,
                            verified_when_changed={"corruption": (0, 10), "changed_number": (2, 10)})
    found = broken.violations(trivial_all_max=25.0, empty_max=5.0)
    assert found == ["truth 97.00 < 99.0", "truth verified on 90.00% < 95.0%",
                     "changed_number: 2 of 10 changed predictions verified (> 10.0%)",
                     "frame_only 25.00 > 20.0 on turns with content",
                     "frame_only 30.00 > 25.0 on all turns", "empty 6.00 > 5.0",
                     "repeat_previous 50.00 >= retrieval 45.00",
                     "not falling with corruption: ((0.0, 97.0), (0.5, 98.0), (1.0, 60.0))"]


def test_a_second_recording_is_compared_row_for_row() -> None:
    """``again``: the truth verified is a second recording's rows against the first (here one row's
    count changed, so one of its rows is not verified), and a missing row is an error, not a pass."""
    rows = [s for s in load_samples([corpus_path("terminal")]) if s.id.startswith("files-create-cat-")]
    def miscount(s: BenchSample) -> BenchSample:
        response = list(s.response)
        response[s.turn_idx - 1] = s.ground_truth.replace("\n2 hello.txt", "\n3 hello.txt")
        return s.model_copy(update={"response": response})

    changed = [miscount(s) if s.id == "files-create-cat-t6" else s for s in rows]
    assert changed != rows
    report = measure_contract(rows, retrieval=False, again=changed)
    assert report.truth_verified == round(100 * (len(rows) - 1) / len(rows), 2)
    with pytest.raises(ValueError, match="the second recording has no row"):
        measure_contract(rows, retrieval=False, again=rows[1:])


def test_one_domain_at_a_time() -> None:
    rows = load_samples([corpus_path("terminal")])[:2]
    mixed = [rows[0], rows[1].model_copy(update={"task": "mcp"})]
    with pytest.raises(ValueError, match=r"one domain at a time, not \['mcp', 'terminal'\]"):
        measure_contract(mixed, retrieval=False)

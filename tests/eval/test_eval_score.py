"""Score math: official aggregate_scores semantics, both Overall figures, A/B rates, judged.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.eval.cli import app
from agentworld.eval.score import ab_summary, normalise, score_official_judged, score_rows


def _judged(task: str, failed: float, total: float, **dims: int) -> dict[str, object]:
    return {"task": f"x/{task}", "id": f"{task}-{total}-{failed}", "gen": "g", "failed": failed,
            "total_score": total, **dims}


# Two domains; zeros are excluded per dimension; failed rows are ignored.
JUDGED = [
    _judged("mcp", 0.0, 4.0, format=5, factuality=3, consistency=4, realism=4, quality=0),
    _judged("mcp", 0.0, 3.0, format=3, factuality=3, consistency=3, realism=3, quality=3),
    _judged("mcp", 1.0, 0, format=0),
    {"task": "x/mcp", "id": "nogen", "gen": "", "failed": 1.0, "error_message": "No model generation"},
    _judged("search", 0.0, 2.0, format=2, factuality=2, consistency=2, realism=2, quality=2),
]


def test_official_semantics_by_hand() -> None:
    report = score_official_judged(JUDGED)
    mcp, search = report.domains["mcp"], report.domains["search"]
    assert (mcp.n, mcp.valid, mcp.failed, mcp.no_generation, mcp.judge_failures) == (4, 2, 2, 1, 1)
    assert mcp.format == pytest.approx((4.0 - 1) / 4 * 100)          # mean(5, 3) = 4
    assert mcp.quality == pytest.approx((3.0 - 1) / 4 * 100)         # the 0 is excluded: mean(3)
    assert mcp.total_score == pytest.approx((3.5 - 1) / 4 * 100)     # mean(4, 3)
    assert search.total_score == pytest.approx(25.0)
    # official Overall = sample-weighted mean of valid totals: mean(4, 3, 2) = 3 → 50
    assert report.overall.sample_weighted == pytest.approx(50.0)
    # published Overall = mean of domain totals: (62.5 + 25) / 2
    assert report.overall.domain_mean == pytest.approx(43.75)
    assert (report.overall.n, report.overall.valid, report.overall.failed) == (5, 3, 2)


def test_cli_score_judged_json(tmp_path: Path) -> None:
    path = tmp_path / "judged.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in JUDGED))
    result = CliRunner().invoke(app, ["score", "--judged", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["overall"]["sample_weighted"] == pytest.approx(50.0)
    assert data["domains"]["mcp"]["format"] == pytest.approx(75.0)
    table = CliRunner().invoke(app, ["score", "--judged", str(path)])
    assert "50.00" in table.output and "43.75" in table.output


def test_score_rows_counts_failures_tokens_and_truncation() -> None:
    preds = [{"id": "a", "domain": "os", "raw": "x", "truncated": True,
              "usage": {"prompt_tokens": 10, "completion_tokens": 5}, "latency_s": 1.5},
             {"id": "b", "domain": "os", "raw": "", "usage": {}},
             {"id": "c", "domain": "os", "raw": "", "error": "BackendError: boom"}]
    judged = [{"id": "a", "domain": "os", "mode": "rubric", "failed": False, "total_score": 5.0,
               "scores": {"format": 5, "factuality": 5, "consistency": 5, "realism": 5, "quality": 5},
               "usage": {"prompt_tokens": 7, "completion_tokens": 3}},
              {"id": "b", "domain": "os", "mode": "rubric", "failed": True, "error": "No model generation"},
              {"id": "c", "domain": "os", "mode": "rubric", "failed": True, "error": "No model generation"}]
    report = score_rows({"os": 4}, preds, judged)
    os_ = report.domains["os"]
    counts = (os_.n, os_.valid, os_.failed, os_.truncated, os_.no_generation, os_.prediction_errors)
    assert counts == (4, 1, 3, 1, 1, 1)
    assert os_.judge_failures == 0
    assert os_.tokens == {"model_prompt": 10, "model_completion": 5, "judge_prompt": 7, "judge_completion": 3}
    assert os_.total_score == 100.0 and os_.latency_s["model"] == 1.5
    assert report.to_json()["domains"]["os"]["format"] == 100.0


def test_ab_rates() -> None:
    rows = [{"id": f"w{i}", "domain": "web", "mode": "turing", "failed": False, "correct": c}
            for i, c in enumerate((True, True, False))]
    rows.append({"id": "w3", "domain": "web", "mode": "turing", "failed": True})
    summary = ab_summary("turing", rows, {"web": 4})
    assert summary["overall"]["accuracy"] == pytest.approx(2 / 3)
    assert summary["overall"]["fooling_rate"] == pytest.approx(1 / 3)
    assert (summary["overall"]["valid"], summary["overall"]["failed"]) == (3, 1)
    ref = ab_summary("reference", [{**r, "mode": "reference"} for r in rows], {"web": 4})
    assert ref["domains"]["web"]["win_rate"] == pytest.approx(2 / 3)


def test_normalise() -> None:
    assert (normalise(1), normalise(3), normalise(5)) == (0.0, 50.0, 100.0)


def test_tables_printed_into_a_pipe_keep_every_header_and_number(tmp_path: Path) -> None:
    """Captured output is not a terminal (like CI logs or ``| tee``): nothing may be cut to 80 columns."""
    from agentworld.cli import app as root
    from agentworld.eval import EvalConfig, run_eval
    from agentworld.eval.score import RUBRIC_HEAD, RULE_COLUMNS, SPEARMAN_HEAD, TIER_HEAD
    from eval_helpers import bench_rows, scripted_judge, scripted_model, write_bench

    write_bench(tmp_path / "data", bench_rows(2))
    write_bench(tmp_path / "data", bench_rows(1, domain="mcp", prefix="m"), domain="mcp")
    config = EvalConfig(data=[tmp_path / "data"], out=tmp_path / "run", model="scripted",
                        judge_model="scripted", progress=False)
    run_eval(config, model=scripted_model(), judge=scripted_judge())    # the CLI run below resumes it
    scores = json.loads((tmp_path / "run" / "scores.json").read_text())
    for command in (["eval", "score", "--run", str(tmp_path / "run")],
                    ["eval", "run", "--data", str(tmp_path / "data"), "--out", str(tmp_path / "run"),
                     "--model", "scripted", "--judge-model", "scripted", "--no-progress"]):
        result = CliRunner().invoke(root, command, env={"COLUMNS": "80"})
        assert result.exit_code == 0, result.output
        words = result.output.split()
        assert "…" not in result.output
        heads = (*RUBRIC_HEAD, *RULE_COLUMNS, *TIER_HEAD, SPEARMAN_HEAD)
        assert all(head in words for head in heads), result.output
        numbers = [v for d in scores["domains"].values() for v in d.values() if isinstance(v, float)]
        numbers += [v for d in scores["rules"].values() for v in d.values()]
        numbers += [v for d in scores["rule_tier"]["domains"].values() for v in d["baselines"].values()]
        assert numbers and all(f"{v:.2f}" in words for v in numbers), result.output
        for name, domain in scores["domains"].items():
            assert f"{domain['valid']}/{domain['n']}" in words and name in words


def test_cli_score_json_carries_baselines_skill_and_calibration(tmp_path: Path) -> None:
    """A model that predicts the truth: rule overall 100, skill 1, beside the frame-only baseline."""
    from agentworld.cli import app as root
    from agentworld.eval import EvalConfig, run_eval
    from eval_helpers import bench_rows, scripted_judge, scripted_model, write_bench

    write_bench(tmp_path / "data", bench_rows(2))
    config = EvalConfig(data=[tmp_path / "data"], out=tmp_path / "run", model="scripted",
                        judge_model="scripted", progress=False)
    run_eval(config, model=scripted_model(), judge=scripted_judge())
    result = CliRunner().invoke(root, ["eval", "score", "--run", str(tmp_path / "run"), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["rules"]["terminal"]["overall"] == 100.0  # the old keys stay
    for line in (out["rule_tier"]["domains"]["terminal"], out["rule_tier"]["overall"]):
        assert line["n"] == 6 and line["overall"] == 100.0
        assert set(line["baselines"]) == {"frame_only", "empty", "repeat_previous", "constant"}
        assert line["strongest"] == max(line["baselines"].values())
        assert line["skill_over_frame_only"] == 1.0 and line["skill_over_strongest"] == 1.0
    spearman = out["rule_tier"]["domains"]["terminal"]["rule_rubric_spearman"]
    assert spearman == {"rho": None, "n": 6}  # every rule score is 100: a constant has no rank correlation

"""The rule tier in context: Spearman with ties, baselines on the model's samples, skill, calibration."""

from __future__ import annotations

import pytest

from agentworld.eval.rules.baselines import baseline_predictions, baseline_scores
from agentworld.eval.rules.context import average_ranks, rule_tier, spearman
from agentworld.eval.rules.scores import score_rules
from agentworld.eval.score import TIER_HEAD, render_text, score_rows
from agentworld.schema import BenchSample

PROMPT = "root@box:/app#"


def _action(keys: str) -> str:
    return f'**Action:**\n```json\n[{{"keystrokes": "{keys}\\n"}}]\n```'


def _obs(text: str) -> str:
    return f"**Environment Observation:**\n{text}"


def terminal_samples(task: str = "terminal") -> list[BenchSample]:
    """Two-turn sessions; three print content (frame-only scores 0), one prints nothing (frame-only
    scores 100), so the frame-only baseline is 25."""
    out = []
    for i, (cmd, printed) in enumerate((("ls", "a.txt  b.txt\n"), ("cat a.txt", "hello\n"), ("pwd", "/app\n"),
                                        ("true", ""))):
        prompts = [_action("cd /app"), _action(cmd)]
        responses = [_obs(f"{PROMPT} cd /app\n{PROMPT}"), _obs(f"{PROMPT} {cmd}\n{printed}{PROMPT}")]
        out.append(BenchSample(task=task, id=f"s{i}", prompt=prompts, response=responses, turn_idx=2,
                               system_str="sys"))
    return out


def rule_row(sample: BenchSample, text: str) -> dict[str, object]:
    """A rule row as the runner writes it."""
    score = score_rules(sample.domain, text, sample.ground_truth, sample)
    return {"id": sample.id, "domain": sample.domain, "rule": score.model_dump(mode="json")}


def rule_rows(samples: list[BenchSample], predict: str) -> list[dict[str, object]]:
    """Rule rows of the truth (``predict="truth"``) or of one baseline's predictions."""
    return [rule_row(s, s.ground_truth if predict == "truth" else baseline_predictions(s)[predict])
            for s in samples]


def test_average_ranks_share_tied_ranks() -> None:
    assert average_ranks([10.0, 20.0, 10.0, 5.0]) == [2.5, 4.0, 2.5, 1.0]


def test_spearman_monotone_reversed_ties_and_undefined() -> None:
    xs = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert spearman(xs, [10.0, 20.0, 25.0, 90.0, 100.0]) == 1.0  # monotone, not linear
    assert spearman(xs, [5.0, 4.0, 3.0, 2.0, 1.0]) == -1.0
    assert spearman([1.0, 2.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0]) == pytest.approx(0.9487, abs=1e-4)  # scipy's
    assert spearman([1.0, 2.0], [2.0, 1.0]) is None  # two points say nothing
    assert spearman([3.0, 3.0, 3.0], [1.0, 2.0, 3.0]) is None  # constant: undefined, not 0
    with pytest.raises(ValueError, match="2 x values, 3 y values"):
        spearman([1.0, 2.0], [1.0, 2.0, 3.0])


def test_truth_has_skill_one_and_frame_only_has_skill_zero() -> None:
    samples = terminal_samples()
    expected = {name: round(sum(baseline_scores(s)[name] for s in samples) / len(samples), 2)
                for name in ("frame_only", "empty", "repeat_previous", "constant")}
    assert expected["frame_only"] == 25.0  # the case is not degenerate
    truth = score_rows({"terminal": 4}, [], [], rule_rows(samples, "truth"), samples=samples).to_json()
    line = truth["rule_tier"]["domains"]["terminal"]
    assert line["baselines"] == expected and line["n"] == 4 and line["overall"] == 100.0
    assert line["skill_over_frame_only"] == 1.0 and line["skill_over_strongest"] == 1.0
    assert line["strongest"] == max(expected.values())
    assert truth["rule_tier"]["overall"]["skill_over_frame_only"] == 1.0
    assert line["rule_rubric_spearman"] is None  # no rubric in this run
    assert truth["rules"]["terminal"]["overall"] == 100.0  # the old keys stay
    frame = score_rows({"terminal": 4}, [], [], rule_rows(samples, "frame_only"), samples=samples).to_json()
    assert frame["rule_tier"]["domains"]["terminal"]["overall"] == expected["frame_only"]
    assert frame["rule_tier"]["domains"]["terminal"]["skill_over_frame_only"] == 0.0
    best = max(expected.values())
    assert frame["rule_tier"]["domains"]["terminal"]["skill_over_strongest"] == round(
        (expected["frame_only"] - best) / (100 - best), 4)


def test_baselines_use_the_domain_of_a_prefixed_task() -> None:
    """``task: bench/terminal`` is scored with the terminal rules, as the runner scores the model."""
    plain = [baseline_scores(s) for s in terminal_samples()]
    prefixed = [baseline_scores(s) for s in terminal_samples("bench/terminal")]
    assert prefixed == plain


def test_baselines_cover_only_the_samples_the_model_was_scored_on() -> None:
    samples = terminal_samples()
    rows = rule_rows(samples, "truth")[:2]  # the other two had prediction errors: no rule row
    tier = rule_tier(samples, rows)
    assert tier is not None and tier.overall.n == 2
    assert tier.overall.baselines["frame_only"] == round(
        sum(baseline_scores(s)["frame_only"] for s in samples[:2]) / 2, 2)
    assert rule_tier(samples, []) is None and rule_tier([], rows) is None


def test_rule_rubric_spearman_over_valid_rubric_judgments() -> None:
    samples = terminal_samples()
    partial = _obs(f"{PROMPT} cat a.txt\nhello\nextra\n{PROMPT}")
    rows = [rule_row(samples[0], samples[0].ground_truth), rule_row(samples[1], partial),
            rule_row(samples[2], ""), rule_row(samples[3], samples[3].ground_truth)]
    overall = {str(r["id"]): r["rule"]["overall"] for r in rows}  # type: ignore[index]
    assert overall["s0"] > overall["s1"] > overall["s2"]  # three distinct rule scores
    judged: list[dict[str, object]] = [{"id": sid, "domain": "terminal", "mode": "rubric", "failed": False,
                                        "total_score": t} for sid, t in (("s0", 5), ("s1", 2), ("s2", 1))]
    judged.append({"id": "s3", "domain": "terminal", "mode": "rubric", "failed": True, "total_score": 0})

    def corr(rows_judged: list[dict[str, object]]) -> tuple[float | None, int]:
        tier = rule_tier(samples, rows, rows_judged)
        found = tier.domains["terminal"].rule_rubric_spearman if tier else None
        assert found is not None
        return found.rho, found.n

    assert corr(judged) == (1.0, 3)  # monotone, not linear; the failed judgment is left out
    assert corr([{**j, "total_score": 6 - float(j["total_score"])} for j in judged[:3]]) == (-1.0, 3)  # type: ignore[arg-type]
    assert corr(judged[:2]) == (None, 2)


def test_table_text_shows_baselines_skill_and_spearman() -> None:
    samples = terminal_samples()
    judged = [{"id": s.id, "domain": "terminal", "mode": "rubric", "failed": False, "total_score": 4,
               "scores": dict.fromkeys(("format", "factuality", "consistency", "realism", "quality"), 4)}
              for s in samples]
    report = score_rows({"terminal": 4}, [], judged, rule_rows(samples, "frame_only"), samples=samples)
    words = render_text(report).split()
    assert all(head in words for head in TIER_HEAD) and "rule_rubric_spearman(n)" in words
    assert report.rule_tier is not None
    line = report.rule_tier.overall
    assert all(f"{v:.2f}" in words for v in line.baselines.values()) and "0.00" in words
    assert "-(4)" in words  # constant rubric totals: no coefficient, but the count is shown

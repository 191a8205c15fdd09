"""Rejection sampling keeps exactly the candidates scoring at or above the threshold."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentworld.data.types import TrainSample
from agentworld.eval.judge import combine_scores, judge_percent
from agentworld.eval.rules.scores import score_rules
from agentworld.models.base import ChatRequest, ChatResult
from agentworld.models.scripted import ScriptedBackend
from agentworld.train.rejection import rejection_sample


def _samples() -> list[TrainSample]:
    out = []
    for n, domain in enumerate(["terminal", "terminal", "mcp"]):
        out.append(TrainSample(id=f"t{n}-t2", trajectory_id=f"t{n}", turn=2, domain=domain, system="sys",
                               history=[("ls", "a b")], action=f"cat f{n}", observation=f"line {n}\nP2",
                               total_turns=2))
    return out


def _teacher(request: ChatRequest) -> ChatResult:
    # Each candidate's content names its seed, so the judge (and the test) know which one it is.
    return ChatResult(content=f"<think>thought {request.seed}</think>"
                              f"<predicted_observation>P{request.seed}</predicted_observation>")


def _judge(request: ChatRequest) -> str:
    found = re.search(r"P(\d+)", request.messages[-1].content.split("Real")[0])
    level = int(found.group(1)) + 1 if found else 1
    scores = {d: level for d in ("format", "factuality", "consistency", "realism", "quality")}
    return f"<final_evaluation>{json.dumps({'scores': scores})}</final_evaluation>"


def test_judge_only_keeps_exactly_those_at_or_above(tmp_path: Path) -> None:
    teacher, judge = ScriptedBackend(default=_teacher), ScriptedBackend(default=_judge)
    out = tmp_path / "kept.jsonl"
    report = rejection_sample(_samples(), teacher, judge, k=4, threshold=50.0, rule_weight=0.0, out=out)
    assert len(report.candidates) == 12
    assert len({r.seed for r in teacher.calls}) == 4  # distinct seed per candidate
    assert all(r.temperature and r.temperature > 0 for r in teacher.calls)
    # judge levels 1..4 -> 0, 25, 50, 75: seeds 2 and 3 pass (50 is exactly at the threshold)
    assert {(c.sample_id, c.index) for c in report.candidates if c.kept} == {
        (s.id, i) for s in _samples() for i in (2, 3)}
    assert [c.score for c in report.candidates[:4]] == [0.0, 25.0, 50.0, 75.0]
    assert report.retention_rate == pytest.approx(0.5)
    assert report.per_domain["terminal"].candidates == 8 and report.per_domain["mcp"].kept == 2
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 6
    assert rows[0]["meta"]["reasoning"] == "thought 2" and rows[0]["meta"]["prediction"] == "P2"
    assert rows[0]["observation"] == "P2" and rows[0]["meta"]["score"] == 50.0
    TrainSample.model_validate(rows[0])
    assert report.summary()["per_domain"]["mcp"]["rate"] == 0.5


def test_combined_score_matches_formula() -> None:
    teacher, judge = ScriptedBackend(default=_teacher), ScriptedBackend(default=_judge)
    samples = _samples()
    report = rejection_sample(samples, teacher, judge, k=4, threshold=40.0, rule_weight=0.5)
    truths = {s.id: s for s in samples}
    expected = set()
    for c in report.candidates:
        s = truths[c.sample_id]
        rules = score_rules(s.domain, f"P{c.index}", s.observation).overall
        score = 0.5 * rules + 0.5 * judge_percent(c.index + 1)
        assert c.score == pytest.approx(score)
        if score >= 40.0:
            expected.add((c.sample_id, c.index))
    assert {(c.sample_id, c.index) for c in report.candidates if c.kept} == expected
    assert 0 < len(expected) < 12


def test_no_judge_and_failures() -> None:
    teacher = ScriptedBackend(["", "<predicted_observation>line 0\nP2</predicted_observation>"])
    report = rejection_sample(_samples()[:1], teacher, None, k=2, threshold=90.0, rule_weight=0.5)
    assert report.candidates[0].error and not report.candidates[0].kept
    assert report.candidates[1].kept and report.candidates[1].score == pytest.approx(100.0)
    bad_judge = ScriptedBackend(default="no verdict")
    report = rejection_sample(_samples()[:1], ScriptedBackend(default=_teacher), bad_judge, k=1,
                              threshold=0.0, rule_weight=0.5)
    assert not report.candidates[0].kept and report.candidates[0].error
    assert combine_scores(None, None, 0.5) is None and combine_scores(80.0, None, 0.5) == 80.0
    with pytest.raises(ValueError, match="temperature must be > 0"):
        rejection_sample(_samples(), teacher, None, threshold=1.0, temperature=0.0)

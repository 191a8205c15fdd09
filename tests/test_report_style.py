"""One report style: every report page comes from the shared template, escapes hostile values, and the
eval report lists samples worst first with a "below" filter; progress bars count n/N."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from agentworld.report_style import MARKER, Html, html_table, page, progress, text_table

HOSTILE = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def _safe(html: str, *, kind: str) -> None:
    """The page is the shared template's, shows the hostile value escaped and never runs it."""
    assert html.startswith("<!doctype html>") and f'<body class="{MARKER}" data-report="{kind}">' in html
    assert f'<header class="{MARKER}">' in html and f'<footer class="{MARKER}">' in html
    assert ESCAPED in html and HOSTILE not in html
    assert not re.search(r"<script\b(?![^>]*>\s*function applyFilter)", html), "a script but the filter"
    assert not re.search(r"""(src|href)=["']?(https?:)?//|url\(""", html)  # no external assets


# -- the pieces ----------------------------------------------------------------------------------------


def test_html_table_escapes_cells_and_keeps_html_fragments() -> None:
    table = html_table(["<h>", "n"], [[HOSTILE, 3], [Html("<code>x</code>"), "4"]], left=[1],
                       row_classes=["bad", ""], cell_classes={1: "num"})
    assert ESCAPED in table and HOSTILE not in table and "&lt;h&gt;" in table
    assert "<td><code>x</code></td>" in table and '<tr class="bad">' in table and "<tr><td>" in table
    assert '<td class="l num">3</td>' in table and isinstance(table, Html)


def test_page_escapes_title_and_meta_and_has_no_script_unless_given() -> None:
    html = page("eval compare", HOSTILE, ["<p>body</p>"], meta=[("run", HOSTILE), ("raw", Html("<i>ok</i>"))])
    _safe(html, kind="eval compare")
    assert "<script" not in html and "<p>body</p>" in html and "<i>ok</i>" in html
    assert "written " in html and "written " not in page("x", "t", [], stamp=False)
    assert "<script>f()</script>" in page("x", "t", [], script="f()")


def test_text_table_aligns_text_left_and_numbers_right_and_never_cuts() -> None:
    lines = text_table(["domain", "arm", "n"], [["all", "bare", "1"], ["a-long-domain", "x", "100"]],
                       title="T", left=2)
    assert lines == ["T",
                     "domain         arm     n",
                     "all            bare    1",
                     "a-long-domain  x     100"]


def test_progress_shows_n_of_total() -> None:
    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    with progress(console) as bar:
        task = bar.add_task("predict", total=7)
        bar.advance(task, 3)
        bar.refresh()
    assert "3/7" in out.getvalue()
    out = io.StringIO()
    with progress(Console(file=out, force_terminal=True, width=120), transient=False) as bar:
        task = bar.add_task("samples", total=None)
        bar.advance(task, 5)
        bar.refresh()
    assert "5/?" in out.getvalue()


def test_stage_progress_is_silent_in_a_pipe(capsys: pytest.CaptureFixture[str]) -> None:
    from agentworld.report_style import StageProgress

    with StageProgress(True, 3, ("predict",)) as advance:
        advance("predict")
    captured = capsys.readouterr()
    assert captured.out == "" and "1/3" not in captured.err


# -- the reports ---------------------------------------------------------------------------------------


def _eval_run(tmp_path: Path) -> Path:
    from agentworld.eval.rules.scores import score_rules
    from agentworld.io import JsonlJournal
    from agentworld.schema import BenchSample, write_bench_jsonl

    ids = ["good", HOSTILE, "bad", "failed-judge"]
    samples = [BenchSample(task="terminal", id=i, prompt=[f"echo {n}"], system_str="sys",
                           response=[f"**Environment Observation:**\n$ echo {n}\n{n}\n$"])
               for n, i in enumerate(ids)]
    data = tmp_path / "terminal_test.jsonl"
    write_bench_jsonl(data, samples)
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"infer": {"data": [str(data)], "model": HOSTILE},
                                                 "judge": {"judge_model": "j"}}))
    totals = {"good": 5.0, HOSTILE: 3.0, "bad": 2.0, "failed-judge": None}  # the judge's 1-5 scale
    with (JsonlJournal(run / "predictions.jsonl") as p, JsonlJournal(run / "rules.jsonl") as r,
          JsonlJournal(run / "judgments.jsonl") as j):
        for s in samples:
            p.append({"id": s.id, "domain": s.domain, "prediction": s.ground_truth, "raw": s.ground_truth})
            r.append({"id": s.id, "domain": s.domain,
                      "rule": score_rules(s.domain, s.ground_truth, s.ground_truth, s).model_dump()})
            total = totals[s.id]
            status = "ok" if total else "parse_error"
            j.append({"id": s.id, "domain": s.domain, "mode": "rubric", "status": status,
                      "scores": dict.fromkeys(("format", "factuality"), 3) if total else {},
                      "total_score": total or 0})
    return run


def test_eval_report_is_worst_first_with_a_below_filter_and_escapes(tmp_path: Path) -> None:
    from agentworld.eval.report import write_report

    html = write_report(_eval_run(tmp_path)).read_text("utf-8")
    _safe(html, kind="eval report")
    order = re.findall(r'<details class="s"[^>]*><summary>([^<]*)', html)
    assert order == ["failed-judge", "bad", ESCAPED, "good"]
    scores = re.findall(r'<details class="s"[^>]*?(?: data-score="([^"]*)")?><summary>', html)
    assert scores == ["", "25", "50", "100"]  # no score (judge failed) first, then lowest first (0-100)
    assert '<input id="below" type="number"' in html and 'oninput="applyFilter()"' in html
    assert 'id="onlyfail"' not in html and "worst first" in html
    assert "s<x" in html  # the filter keeps scores below the threshold


def test_compare_page_uses_the_template_and_escapes(tmp_path: Path) -> None:
    from agentworld.eval.compare.command import Comparison, MetricRow, SampleDiff
    from agentworld.eval.compare.render import render_text, write_html

    row = MetricRow(run=HOSTILE, baseline="base", domain="all", metric="rule_overall", n=2, dropped=0,
                    baseline_mean=50.0, run_mean=60.0, diff=10.0, ci_low=5.0, ci_high=15.0, verdict="higher")
    diff = SampleDiff(id=HOSTILE, domain="d", metric="rule_overall", run=HOSTILE, baseline_value=50,
                      run_value=60, diff=10)
    result = Comparison(runs=[{"label": "base"}, {"label": HOSTILE}], baseline="base", resamples=100,
                        confidence=0.95, seed=0, rows=[row], samples=[diff])
    html = write_html(result, tmp_path / "c.html").read_text("utf-8")
    _safe(html, kind="eval compare")
    assert "+10.00" in html and "[+5.00, +15.00]" in html
    assert render_text(result).splitlines()[2].split() == ["all", "rule_overall", "2", "0", "50.00", "60.00",
                                                           "+10.00", "[+5.00,", "+15.00]", "higher"]


def test_probes_page_uses_the_template_and_escapes(tmp_path: Path) -> None:
    from agentworld.domains.probes import Check, Probe
    from agentworld.eval.probes.config import ProbeResult
    from agentworld.eval.probes.report import render_text, summarize, write_html

    probe = Probe(id=HOSTILE, domain="d", category="controllability", name="n", system="s", history=(),
                  action="ls", expected="a.txt", checks=(Check("contains", "a.txt"),))
    result = ProbeResult(id=HOSTILE, domain="d", category="controllability", name="n", passed=False,
                         failed_checks=["contains 'a.txt'"])
    (tmp_path / "predictions.jsonl").write_text(json.dumps({"id": HOSTILE, "domain": "d",
                                                            "prediction": HOSTILE}) + "\n")
    report = summarize([result], {"model": HOSTILE, "seed": 0, "variants": 1})
    html = write_html(tmp_path, [probe], [result], report).read_text("utf-8")
    _safe(html, kind="eval probes")
    assert 'id="onlyfail"' in html and "0.0% (0/1)" in html
    assert render_text(report).splitlines()[0].split() == ["domain", "controllability", "error_handling",
                                                           "long_context", "overall"]


def test_closed_loop_page_uses_the_template_and_escapes() -> None:
    from agentworld.eval.closedloop.render import render_html
    from agentworld.eval.closedloop.score import summarize

    step = {"turn": "1", "action": "ls", "simulated": HOSTILE, "real": "ok", "rule": 0.0, "exact": False,
            "rubric": None}
    row = {"task": HOSTILE, "domain": "d", "arm": "bare", "first_divergence": None, "real_success": True,
           "sim_success": False, "agree": False, "fidelity": 0.0, "rubric": None, "real_steps": 1,
           "sim_steps": 1, "real_routed": 0, "sim_ended": "done", "steps": [step]}
    html = render_html({"agent": HOSTILE, "model": "m", "judge": None, "seed": 0, "tasks_finished": 1,
                        "tasks_planned": 1, "summary": summarize([row]), "tasks": [row]})
    _safe(html, kind="eval closed-loop")
    assert "outcome differs" in html


def test_synth_check_page_uses_the_template_and_escapes() -> None:
    from agentworld.synth.report import CheckReport, Rejection, WorldVerdict, render_html

    worlds = [WorldVerdict(path="/w/a", name="a", kept=True),
              WorldVerdict(path=HOSTILE, name=HOSTILE, kept=False, stage="references",
                           rejections=[Rejection(reason="unknown_tool", detail=HOSTILE, task=HOSTILE)])]
    html = render_html(CheckReport(worlds=worlds, thresholds={"seed": HOSTILE}))
    _safe(html, kind="synth check")
    assert "<script" not in html and "World checks: 1 kept of 2" in html
    assert '<tr class="bad">' in html and '<td class="l outcome">rejected at references</td>' in html


def test_data_stats_page_uses_the_template_and_escapes() -> None:
    from agentworld.data.dataset_stats import DatasetStats
    from agentworld.data.stats_render import stats_html

    data = DatasetStats(samples=3, trajectories=1, domains={HOSTILE: 3}, categories={"echo": 3})
    data.action_tokens.add(5)
    html = stats_html(data, title=HOSTILE)
    _safe(html, kind="data stats")
    assert "<svg" in html and "<script" not in html


def test_no_report_keeps_its_own_table_or_page_helper() -> None:
    """The duplicated helpers are gone: tables and pages come from report_style only."""
    src = Path(__file__).resolve().parents[1] / "src" / "agentworld"
    for path in src.rglob("*.py"):
        if path.name == "report_style.py" or "domains" in path.parts:
            continue
        text = path.read_text("utf-8")
        assert "<style>" not in text and "<table>" not in text and '<table class="t">' not in text, path
        assert not re.search(r"^def _?(plain_)?table\(", text, re.M), path


def test_the_module_examples_hold() -> None:
    import doctest

    import agentworld.report_style as style

    assert doctest.testmod(style).failed == 0

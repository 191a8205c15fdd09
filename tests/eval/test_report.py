"""HTML report of a run folder: parses, holds charts/tables/samples, escapes everything."""

from __future__ import annotations

import json
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

from agentworld.eval.report import write_report
from agentworld.eval.rules.scores import score_rules
from agentworld.io import JsonlJournal
from agentworld.schema import BenchSample, write_bench_jsonl

HOST = "root@ad092d3df69c:/app#"


class Tags(HTMLParser):
    """Counts start/end tags and collects attributes, so structure and escaping can be checked."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: Counter[str] = Counter()
        self.ends: Counter[str] = Counter()
        self.attrs: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts[tag] += 1
        self.attrs.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        self.ends[tag] += 1

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _samples() -> list[BenchSample]:
    term = [BenchSample(task="terminal", id=f"term-{i}", prompt=[f"act {i}"], system_str="sys",
                        response=[f"**Environment Observation:**\n{HOST} echo {i}\n{i}\n{HOST}"])
            for i in range(3)]
    mcp = BenchSample(task="mcp", id="mcp-0", system_str="sys",
                      prompt=['{"tool_name": "get_user", "arguments": {}}'],
                      response=['**Environment Observation:**\n{"user_id": "u1", "tier": "gold"}'])
    return [*term, mcp]


def make_run(tmp_path: Path, *, with_data: bool = True) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    data = tmp_path / "terminal_test.jsonl"
    samples = _samples()
    write_bench_jsonl(data, samples)
    config = {"infer": {"data": [str(data)] if with_data else [], "model": "retrieval"},
              "judge": {"judge_model": "judge-x", "judge_mode": "rubric"}}
    (run / "config.json").write_text(json.dumps(config))
    preds = {
        "term-0": samples[0].ground_truth,
        "term-1": f"**Environment Observation:**\n{HOST} echo 1\n<script>alert('x')</script>\n{HOST}",
        "term-2": "",
        "mcp-0": '**Environment Observation:**\n{"user_id": "u1", "tier": "silver"}',
    }
    with JsonlJournal(run / "predictions.jsonl") as j, JsonlJournal(run / "rules.jsonl") as r:
        j.append({"id": "term-0", "domain": "terminal", "prediction": "stale", "raw": "stale"})
        for s in samples:
            pred = preds[s.id]
            j.append({"id": s.id, "domain": s.domain, "prediction": pred, "raw": pred,
                      "truncated": s.id == "term-2", "error": None, "latency_s": 0.1,
                      "finish_reason": "length" if s.id == "term-2" else "stop",
                      "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
            r.append({"id": s.id, "domain": s.domain,
                      "rule": score_rules(s.domain, pred, s.ground_truth, s).model_dump()})
    with JsonlJournal(run / "judgments.jsonl") as j:
        for s, total in zip(samples, (5, 3, 1, 4), strict=True):
            failed = s.id == "term-2"
            j.append({"id": s.id, "domain": s.domain, "mode": "rubric", "failed": failed,
                      "error": "judge reply did not parse" if failed else None,
                      "scores": {} if failed else dict.fromkeys(("format", "factuality", "consistency",
                                                                 "realism", "quality"), total),
                      "total_score": 0 if failed else total, "weaknesses": ["<b>bold</b> claim"]})
    return run


def test_report_parses_and_holds_charts_tables_and_samples(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    out = write_report(run)
    assert out == run / "report.html"
    page = out.read_text("utf-8")
    tags = Tags()
    tags.feed(page)
    assert tags.starts["html"] == 1 and tags.starts["svg"] == 1
    assert tags.starts["rect"] == 2 * 5 + 5  # 2 domains × 5 dimensions + legend
    assert tags.starts["details"] == 4 == tags.ends["details"]
    assert tags.starts["script"] == 1  # only the report's own filter script
    assert not any(a.get("src") or (a.get("href") or "").startswith("http") for _, a in tags.attrs)
    text = "".join(tags.text)
    for needle in ("retrieval", "judge-x", "domain mean", "sample-weighted", "Rule tier", "line F1",
                   "truncated", "judge failed", "term-1", "mcp-0"):
        assert needle in text, needle
    assert "<script>alert('x')</script>" in text  # shown as text …
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page  # … because it was escaped
    assert "&lt;b&gt;bold&lt;/b&gt;" in page and "stale" not in text  # journal: last row wins
    assert 'class="chg"' in page and '<mark class="x">' in page  # differences highlighted
    for needle in ("against trivial baselines", "frame_only", "empty", "repeat_previous",
                   "skill over frame_only", "rule/rubric Spearman", "– (n=2)", "– (n=1)"):
        assert needle in text, needle


def test_report_uses_scores_json_and_works_without_data(tmp_path: Path) -> None:
    run = make_run(tmp_path, with_data=False)
    scores = {"domains": {"terminal": {"n": 3, "valid": 2, "failed": 1, "format": 87.5, "factuality": 50.0,
                                       "consistency": 50.0, "realism": 50.0, "quality": 50.0,
                                       "total_score": 50.0}},
              "overall": {"domain_mean": 12.34, "sample_weighted": 56.78, "n": 4, "valid": 3, "failed": 1}}
    (run / "scores.json").write_text(json.dumps(scores))
    (run / "rules.jsonl").unlink()
    page = write_report(run, tmp_path / "custom.html").read_text("utf-8")
    assert "12.34" in page and "56.78" in page and "predictions only" in page
    assert "No rule scores" in page and page.count('<details class="s"') == 4


def _tier_cells(page: str) -> list[list[str]]:
    """The rows of the baseline table, as cell texts."""
    table = page.split("against trivial baselines", 1)[1].split("</table>", 1)[0]
    return [[c.split("</td>")[0] for c in row.split("<td>")[1:]] for row in table.split("<tr>")[2:]]


def test_report_shows_baselines_and_skill_even_with_an_old_scores_json(tmp_path: Path) -> None:
    """A scores.json written before the rule tier had baselines: they are computed from the data."""
    from agentworld.eval.rules.baselines import mean_baselines

    run = make_run(tmp_path)
    (run / "scores.json").write_text(json.dumps({"domains": {}, "overall": {}}))
    page = write_report(run).read_text("utf-8")
    rows = {row[0]: row for row in _tier_cells(page)}
    assert set(rows) == {"terminal", "mcp", "overall"}
    expected = mean_baselines(_samples()[:3])
    assert rows["terminal"][3:6] == [f"{expected[b]:.1f}" for b in ("frame_only", "empty", "repeat_previous")]
    assert rows["overall"][1] == "4" and rows["overall"][-1] == "–"  # no pooled correlation across domains

"""``eval compare`` on real ``eval run`` folders made against the mock server (world model and judge).

The mock corrupts a seeded, nested subset of samples: corruption 0 vs 0.5 is a real difference the
interval must find; corruption 0.25 under two seeds is the same model sampled twice, whose interval
must hold zero. Bootstrap seeds are fixed, so every assertion here is deterministic.
"""

from __future__ import annotations

import json
import os
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentworld.cli import app as root
from agentworld.eval.cli import app
from agentworld.eval.compare.stats import paired_bootstrap, stratified_bootstrap
from agentworld.eval.rules.corruptions import hash_uniform
from agentworld.serve.mock_server import MockConfig, run_mock_server
from eval_helpers import bench_rows, write_bench

TERMINAL_TRAJECTORIES, SEARCH_TRAJECTORIES, TURNS = 8, 5, 3
N = (TERMINAL_TRAJECTORIES + SEARCH_TRAJECTORIES) * TURNS  # 39 samples, two domains


def _eval(data: Path, out: Path, corruption: float, seed: int, *extra: str, judge: bool = True) -> None:
    with run_mock_server(MockConfig(data=[data], corruption_rate=corruption, seed=seed)) as url:
        args = ["run", "--data", str(data), "--model-base-url", url, "--model", "wm", "--out", str(out),
                "--no-progress", "--backoff-s", "0.01", *extra]
        args += ["--judge-base-url", url, "--judge-model", "judge"] if judge else ["--no-judge"]
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Run folders over one data folder (terminal + search): faithful, corrupted, and two seeds."""
    root_dir = tmp_path_factory.mktemp("compare")
    data = root_dir / "data"
    write_bench(data, bench_rows(TERMINAL_TRAJECTORIES, turns=TURNS))
    search = bench_rows(SEARCH_TRAJECTORIES, turns=TURNS, domain="search", prefix="s")
    write_bench(data, search, domain="search")
    out = {"data": data}
    for name, corruption, seed in (("c0", 0.0, 0), ("c50", 0.5, 0), ("seed1", 0.25, 1), ("seed2", 0.25, 2)):
        out[name] = root_dir / name
        _eval(data, out[name], corruption, seed)
    return out


def _compare(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["compare", *args, "--json"])
    assert result.exit_code == 0, result.output
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def _rows(report: dict[str, Any], domain: str = "all") -> dict[str, dict[str, Any]]:
    return {row["metric"]: row for row in report["rows"] if row["domain"] == domain}


def test_corruption_0_vs_05_interval_excludes_zero(runs: dict[str, Path]) -> None:
    report = _compare("--run", str(runs["c0"]), "--run", str(runs["c50"]), "--seed", "3")
    assert report["baseline"] == "c0" and report["resamples"] == 10_000 and report["confidence"] == 0.95
    rows = _rows(report)
    assert set(rows) == {"rubric.total", "rubric.format", "rubric.factuality", "rubric.consistency",
                         "rubric.realism", "rubric.quality", "rule.overall", "rule.exact", "rule.line_f1",
                         "rule.structure"}
    for metric, row in rows.items():
        assert row["n"] == N and row["dropped"] == 0, metric
        assert row["baseline_mean"] == 100.0, metric  # the faithful mock replays the truth
        assert row["ci_low"] <= row["diff"] <= row["ci_high"] < 0, metric
    for domain in ("terminal", "search"):
        assert _rows(report, domain)["rule.overall"]["ci_high"] < 0, domain
    # Per sample: exactly the samples the mock corrupted at 0.5 lost rule points.
    worse = {d["id"] for d in report["samples"] if d["metric"] == "rule.overall" and d["diff"] < 0}
    corrupted = {d["id"] for d in report["samples"] if d["metric"] == "rule.overall"
                 and hash_uniform(0, "corrupt", d["id"]) < 0.5}
    assert worse == corrupted and 0 < len(worse) < N


def test_same_model_two_seeds_interval_includes_zero(runs: dict[str, Path]) -> None:
    args = ("--run", str(runs["seed1"]), "--run", str(runs["seed2"]), "--seed", "0")
    report = _compare(*args)
    # Every metric over all domains, the headline ones per domain: zero lies at least 18% of the
    # interval's width inside it under each of 30 bootstrap seeds (0-29), so this is no lucky draw.
    checked = [(d, m) for d in ("terminal", "search") for m in ("rubric.total", "rule.overall")]
    checked += [("all", m) for m in _rows(report)]
    assert len(checked) == 14
    for domain, metric in checked:
        row = _rows(report, domain)[metric]
        assert row["n"] > 0 and row["ci_low"] < 0 < row["ci_high"], (domain, metric, row)
    diffs = [d["diff"] for d in report["samples"] if d["metric"] == "rule.overall"]
    assert min(diffs) < 0 < max(diffs)  # the seeds corrupt different samples: pairs differ both ways
    assert _compare(*args) == {**report}  # same bootstrap seed, same intervals
    other = _rows(_compare(*args[:4], "--seed", "1"))["rule.overall"]
    assert other["diff"] == _rows(report)["rule.overall"]["diff"]
    assert other["ci_low"] != _rows(report)["rule.overall"]["ci_low"]


def test_bootstrap_on_known_data() -> None:
    assert paired_bootstrap([2.0, 2.0, 2.0]) == (2.0, 2.0)
    assert paired_bootstrap([]) is None and paired_bootstrap([5.0]) is None  # one pair: no spread
    assert stratified_bootstrap([[5.0], []]) is None and stratified_bootstrap([[5.0], [1.0]]) == (3.0, 3.0)
    # mean 0.5, standard error 0.05: the percentile interval is close to 0.5 ± 1.96 × 0.05
    low, high = paired_bootstrap([0.0, 1.0] * 50, seed=1)  # type: ignore[misc]
    assert abs(low - 0.402) < 0.012 and abs(high - 0.598) < 0.012
    narrow = paired_bootstrap([0.0, 1.0] * 50, seed=1, confidence=0.5)
    assert narrow is not None and low < narrow[0] < 0.5 < narrow[1] < high
    assert paired_bootstrap([1.0, 5.0, 2.0], seed=7) == paired_bootstrap([1.0, 5.0, 2.0], seed=7)
    spread = [float(v) for v in range(17)]
    assert paired_bootstrap(spread, seed=7) != paired_bootstrap(spread, seed=8)
    # "all" is the mean of the domains' means (the published Overall), not the pooled mean (1.8)
    assert stratified_bootstrap([[1.0, 1.0, 1.0], [3.0, 3.0], []]) == (2.0, 2.0)
    assert stratified_bootstrap([[], []]) is None
    with pytest.raises(ValueError, match="resamples must be at least 1"):
        paired_bootstrap([1.0], resamples=0)
    with pytest.raises(ValueError, match="confidence must be between 0 and 1"):
        stratified_bootstrap([[1.0]], confidence=1.0)


def test_run_over_other_data_is_refused_unless_paired_by_id(runs: dict[str, Path], tmp_path: Path) -> None:
    """A data file rewritten with another system prompt (a prompt variant): same ids, other bytes."""
    variant = tmp_path / "variant-data"
    variant.mkdir()
    for path in runs["data"].iterdir():
        (variant / path.name).write_text(path.read_text().replace("You simulate", "Simulate faithfully"))
    _eval(variant, tmp_path / "variant", 0.0, 0, judge=False)
    args = ["eval", "compare", "--run", str(runs["c0"]), "--run", str(tmp_path / "variant")]
    result = CliRunner().invoke(root, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: runs c0 and variant were evaluated on different "
                                                   "data (data vs variant-data, fingerprints "), result.output
    assert "--allow-different-data" in lines[0] and "Traceback" not in result.output
    paired = CliRunner().invoke(root, [*args, "--allow-different-data", "--json"])
    assert paired.exit_code == 0, paired.output
    assert "warning: runs c0 and variant were evaluated on different data" in paired.stderr
    row = _rows(json.loads(paired.stdout))["rule.overall"]
    assert row["n"] == N and row["diff"] == 0.0  # both replay the truth


@pytest.mark.parametrize(("args", "message"), [
    (["--run", "{c0}"], "give at least two run folders"),
    (["--run", "{c0}", "--run", "{c0}"], "run folder given twice"),
    (["--run", "{c0}", "--run", "{data}"], "not an agentworld eval run"),
    (["--run", "{c0}", "--run", "{c50}", "--baseline", "nope"], "--baseline 'nope' is none of the runs; give "
                                                                 "one of: c0, c50"),
    (["--run", "{c0}", "--run", "{c50}", "--out", "{c0}/predictions.jsonl"], "--out: "),
    (["--run", "{c0}", "--run", "{c50}", "--metrics", "rule.bogus"], "unknown metric"),
])
def test_user_errors_are_one_red_line(runs: dict[str, Path], args: list[str], message: str) -> None:
    before = (runs["c0"] / "predictions.jsonl").read_bytes()
    filled = [a.format(**{k: str(v) for k, v in runs.items()}) for a in args]
    result = CliRunner().invoke(root, ["eval", "compare", *filled])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output
    assert (runs["c0"] / "predictions.jsonl").read_bytes() == before


def test_unshared_samples_and_failed_judgments_are_dropped_and_counted(runs: dict[str, Path],
                                                                       tmp_path: Path) -> None:
    partial = tmp_path / "partial"
    _eval(runs["data"], partial, 0.5, 0, "--domains", "terminal", "--limit", "10")
    broken = tmp_path / "broken"
    shutil.copytree(runs["c50"], broken)
    with (broken / "judgments.jsonl").open("a") as handle:  # the last row of an id wins
        handle.write(json.dumps({"id": "t0-1", "domain": "terminal", "mode": "rubric",
                                 "status": "parse_error", "error": "Judge scoring failed"}) + "\n")
    result = CliRunner().invoke(app, ["compare", "--run", str(runs["c0"]), "--run", str(partial),
                                      "--run", str(broken), "--json"])
    assert result.exit_code == 0, result.output
    assert "warning: partial lacks 29 of the 39 samples" in result.stderr
    assert "'limit': 10" in result.stderr and "'domains': ['terminal']" in result.stderr
    report = json.loads(result.stdout)
    rows = {(r["run"], r["domain"], r["metric"]): r for r in report["rows"]}
    assert rows[("partial", "terminal", "rule.overall")]["n"] == 10
    assert rows[("partial", "all", "rule.overall")]["drop_reasons"] == {"missing in partial": 29}
    assert rows[("broken", "all", "rule.overall")]["n"] == N
    judged = rows[("broken", "all", "rubric.total")]
    assert judged["n"] == N - 1 and judged["drop_reasons"] == {"judge parse_error in broken": 1}
    plain = CliRunner().invoke(app, ["compare", "--run", str(runs["c0"]), "--run", str(broken)])
    assert "rubric.total: 1 dropped (judge parse_error in broken: 1)" in plain.stdout


def test_a_tier_one_run_lacks_is_left_out_with_a_warning(runs: dict[str, Path], tmp_path: Path) -> None:
    _eval(runs["data"], tmp_path / "rules-only", 0.5, 0, judge=False)
    args = ["compare", "--run", str(runs["c0"]), "--run", str(tmp_path / "rules-only")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "warning: rules-only has no judgments: the rubric tier of rules-only vs c0 is not compared" \
        in result.stderr
    assert "rule.overall" in result.stdout and "rubric.total" not in result.stdout
    unruled = tmp_path / "unruled"
    shutil.copytree(runs["c50"], unruled)
    (unruled / "rules.jsonl").unlink()
    args = ["compare", "--run", str(runs["c0"]), "--run", str(unruled), "--run", str(tmp_path / "rules-only")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "warning: unruled has no rule scores: the rule tier of unruled vs c0 is not compared" \
        in result.stderr
    assert "rubric.total" in result.stdout.split("rules-only vs c0")[0]
    assert "rule.overall" not in result.stdout.split("rules-only vs c0")[0]


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.links: list[str | None] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.links += [value for name, value in attrs if name in ("src", "href")]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_table_and_html_page(runs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "compare.html"
    args = ["compare", "--run", str(runs["c0"]), "--run", str(runs["c50"]), "--run", str(runs["seed1"]),
            "--baseline", "c50", "--bootstrap", "500", "--out", str(page)]
    assert CliRunner().invoke(app, args).exit_code == 0
    result = CliRunner().invoke(app, args)  # a page of ours (its mark matches): replaced
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("c0 vs c50: mean paired difference")
    assert "95% bootstrap interval (500 resamples" in lines[0]
    all_rule = next(line for line in lines if line.startswith("all") and " rule.overall " in line)
    assert all_rule.split()[2:4] == [str(N), "0"] and all_rule.endswith("higher")
    assert any(line.startswith("seed1 vs c50") for line in lines) and f"wrote {page}" in result.stdout
    html = page.read_text("utf-8")
    tags = _Tags()
    tags.feed(html)
    assert tags.tags.count("svg") == 2  # one forest plot per comparison
    assert tags.tags.count("details") == 4  # per-sample tables: 2 comparisons x 2 headline metrics
    assert "script" not in tags.tags and not tags.links  # self-contained: nothing is fetched
    page.write_text("my notes")
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 1 and "changed since agentworld wrote it" in str(refused.exception)
    assert page.read_text() == "my notes"  # a page that is not ours is never replaced
    page.write_text(html)
    text = "".join(tags.text)
    for needle in ("c50 (baseline)", "c0 vs c50", "seed1 vs c50", "rule.overall", "t0-1", "s4-3"):
        assert needle in text, needle
    # Atomic: a write that fails (here: at fsync) leaves the previous page whole and no temporary file.
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    failed = CliRunner().invoke(app, args)  # a full disk is the run's error: one line, exit 2
    assert failed.exit_code == 2 and "disk full" in failed.output and "Traceback" not in failed.output
    assert page.read_text("utf-8") == html
    assert sorted(p.name for p in tmp_path.iterdir()) == [".compare.html.agentworld", "compare.html"]


def test_hostile_rows_are_dropped_by_reason_and_escaped(runs: dict[str, Path], tmp_path: Path) -> None:
    hostile = tmp_path / "<i>hostile"
    shutil.copytree(runs["c0"], hostile)
    with (hostile / "predictions.jsonl").open("a") as handle:
        handle.write(json.dumps({"id": "t1-1", "domain": "terminal", "error": "APIError: boom"}) + "\n")
    with (hostile / "judgments.jsonl").open("a") as handle:
        handle.write(json.dumps({"id": "t1-2", "domain": "terminal", "mode": "rubric", "status": "ok",
                                 "scores": {"format": 9}, "total_score": 99}) + "\n")
    with (hostile / "rules.jsonl").open("a") as handle:
        handle.write(json.dumps({"id": "t1-3", "domain": "terminal", "rule": {"overall": "high"}}) + "\n")
    page = tmp_path / "page.html"
    result = CliRunner().invoke(app, ["compare", "--run", str(runs["c0"]), "--run", str(hostile), "--json",
                                      "--out", str(page), "--bootstrap", "100"])
    assert result.exit_code == 0, result.output
    rows = _rows(json.loads(result.stdout), "terminal")
    assert rows["rubric.total"]["drop_reasons"] == {"prediction error in <i>hostile": 1,
                                                    "score out of range 1-5 in <i>hostile": 1}
    assert rows["rubric.format"]["drop_reasons"] == {"prediction error in <i>hostile": 1,
                                                     "score out of range 1-5 in <i>hostile": 1}
    assert rows["rubric.quality"]["drop_reasons"] == {"prediction error in <i>hostile": 1,
                                                      "dimension not scored in <i>hostile": 1}
    assert rows["rule.overall"]["drop_reasons"] == {"prediction error in <i>hostile": 1,
                                                    "rule overall not a number in <i>hostile": 1}
    assert rows["rule.overall"]["n"] == TERMINAL_TRAJECTORIES * TURNS - 2
    html = page.read_text("utf-8")
    assert "<i>" not in html and "&lt;i&gt;hostile" in html

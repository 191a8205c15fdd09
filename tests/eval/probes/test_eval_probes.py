"""``agentworld eval probes``: generated probes, their verdicts, and runs against the mock server.

The world model is the mock OpenAI-compatible server on 127.0.0.1 serving the probes written out as
data (the product's own export); everything else — generation, requests, cache, journal, verdicts,
report — is the product code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.domains.base import plugins
from agentworld.domains.probes import (
    CATEGORIES,
    CONTEXT_GAPS,
    Check,
    failure,
    probe_from_row,
    probe_row,
    verdict,
)
from agentworld.eval.probes.command import generate_probes, run_probes
from agentworld.eval.probes.config import ProbesConfig
from agentworld.outputs import LOCK_NAME
from agentworld.schema import load_samples
from agentworld.serve.mock_server import MockConfig, run_mock_server

runner = CliRunner()
SRC = Path(__file__).resolve().parents[3] / "src"
PROBED = ("mcp", "search", "swe", "terminal", "web")


def _stats(url: str) -> dict[str, Any]:
    stats: dict[str, Any] = httpx.get(url.removesuffix("/v1") + "/_mock/stats").json()
    return stats


def _data(tmp_path: Path, **options: Any) -> Path:
    path = tmp_path / "probes.jsonl"
    assert run_probes(ProbesConfig(write_data=path, **options)) is None
    return path


def _run(url: str, out: Path, **options: Any) -> dict[str, Any]:
    report = run_probes(ProbesConfig(model="mock", model_base_url=url, out=out, progress=False, max_retries=0,
                                     **options))
    assert report is not None
    return report


# -- generation ------------------------------------------------------------------------------------

def test_every_real_domain_contributes_probes_of_every_category_through_its_plugin() -> None:
    with_probes = sorted(name for name, p in plugins().items() if p.probes)
    assert with_probes == sorted(PROBED)
    probes = generate_probes(seed=0, variants=2)
    for domain in PROBED:
        mine = [p for p in probes if p.domain == domain]
        assert {p.category for p in mine} == set(CATEGORIES), domain
        assert 15 <= len(mine) <= 40, (domain, len(mine))
        gaps = sorted({p.gap for p in mine if p.category == "long_context"})
        assert gaps == list(CONTEXT_GAPS)
        for p in mine:
            if p.gap is not None:  # the establishing turn plus the gap's intervening turns
                assert len(p.history) == p.gap + 1


def test_probes_are_deterministic_for_a_seed_and_differ_between_seeds() -> None:
    first = [probe_row(p) for p in generate_probes(seed=4, variants=2)]
    assert first == [probe_row(p) for p in generate_probes(seed=4, variants=2)]
    other = [probe_row(p) for p in generate_probes(seed=5, variants=2)]
    assert [r["id"] for r in first] == [r["id"] for r in other] and first != other
    assert len({r["id"] for r in first}) == len(first)


def test_each_expected_observation_passes_its_own_verdict_and_survives_export(tmp_path: Path) -> None:
    probes = generate_probes(seed=1, variants=2)
    assert all(verdict(p.checks, p.expected).passed for p in probes)
    path = _data(tmp_path, seed=1, variants=2)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [probe_from_row(r) for r in rows] == probes
    samples = load_samples([path])
    assert [s.ground_truth for s in samples] == [p.expected for p in probes]
    assert all(s.domain in PROBED for s in samples)


# -- verdict functions -------------------------------------------------------------------------------

@pytest.mark.parametrize(("check", "good", "bad"), [
    (Check("contains", "ENOENT"), "ENOENT: no such file", "no such file"),
    (Check("line", "alpha-7"), "$ cat notes.txt\n  alpha-7 \n$", "$ cat notes.txt\nalpha-77\n$"),
    (Check("regex", r"^Exit Code: 127$"), "Output: x\nExit Code: 127\nSignal: (none)", "Exit Code: 1270"),
    (Check("absent", r"Traceback"), "all good", "Traceback (most recent call last):"),
])
def test_each_check_kind_passes_and_fails(check: Check, good: str, bad: str) -> None:
    assert verdict((check,), f"**Environment Observation:**\n{good}").passed
    result = verdict((check,), bad)
    assert not result.passed and result.failed == (check.describe(),)


def test_the_error_class_check_is_the_domains_own_error_patterns() -> None:
    shell = failure(plugins()["terminal"].error_patterns)
    assert verdict((shell,), "root@h:/app# frob\nbash: frob: command not found\nroot@h:/app#").passed
    assert not verdict((shell,), "root@h:/app# frob\nfrob: done\nroot@h:/app#").passed
    classed = {p.domain for p in generate_probes(seed=0, variants=1)
               if p.category == "error_handling" and shell.kind in [c.kind for c in p.checks]
               and any(c.value == failure(plugins()[p.domain].error_patterns).value for c in p.checks)}
    assert classed == set(PROBED)


@pytest.mark.parametrize("domain", PROBED)
@pytest.mark.parametrize("category", CATEGORIES)
def test_each_probe_family_fails_a_wrong_observation(domain: str, category: str) -> None:
    """Per domain and category: the expected observation passes, a plausible wrong one fails."""
    wrong = {
        "controllability": "Error: internal error while processing the request",
        "error_handling": "Success: the operation completed.",
        "long_context": "value-0000",
    }[category]
    probes = [p for p in generate_probes(seed=2, variants=1, domains=[domain]) if p.category == category]
    assert probes
    for p in probes:
        assert verdict(p.checks, p.expected).passed, p.id
        assert not verdict(p.checks, f"**Environment Observation:**\n{wrong}").passed, p.id


def test_a_right_value_in_the_wrong_shape_fails_error_handling() -> None:
    terminal = generate_probes(seed=0, variants=1, domains=["terminal"])
    (probe,) = [p for p in terminal if p.name == "missing-file"]
    missing = probe.action.split("cat ")[1].split(".txt")[0]
    shapeless = f"root@host:/app# cat {missing}.txt\nfile {missing}.txt is missing\n"
    assert not verdict(probe.checks, shapeless).passed


# -- runs against the mock server --------------------------------------------------------------------

def test_faithful_mock_scores_100_and_accuracy_falls_as_corruption_rises(tmp_path: Path) -> None:
    data = _data(tmp_path)
    overall: list[float] = []
    for rate in (0.0, 0.5, 1.0):
        with run_mock_server(MockConfig(data=[data], corruption_rate=rate, seed=7)) as url:
            report = _run(url, tmp_path / f"run-{rate}")
            assert _stats(url).get("unmatched", 0) == 0 and _stats(url)["matched"] > 0
        overall.append(report["overall"]["accuracy"])
        if rate == 0.0:
            assert report["overall"]["passed"] == report["overall"]["n"] >= 100
            assert all(v["overall"]["accuracy"] == 100.0 for v in report["domains"].values())
            assert all(report["categories"][c]["accuracy"] == 100.0 for c in CATEGORIES)
    assert overall[0] == 100.0 > overall[1] > overall[2], overall
    passed = [{r["id"] for r in map(json.loads, (tmp_path / f"run-{rate}" / "verdicts.jsonl").open())
               if r["passed"]} for rate in (0.0, 0.5, 1.0)]
    assert passed[2] <= passed[1] <= passed[0]  # nested corruption: a probe failed once stays failed
    saved = json.loads((tmp_path / "run-1.0" / "report.json").read_text())
    assert saved["overall"]["accuracy"] == overall[2] and set(saved["domains"]) == set(PROBED)
    page = (tmp_path / "run-0.5" / "report.html").read_text()
    assert "Accuracy by domain and category" in page and "terminal-file-recall-0-gap100" in page


def test_resume_sends_only_the_probes_without_a_stored_prediction(tmp_path: Path) -> None:
    data = _data(tmp_path, domains=["terminal", "mcp"], variants=1)
    out = tmp_path / "run"
    with run_mock_server(MockConfig(data=[data])) as url:
        first = _run(url, out, domains=["terminal", "mcp"], variants=1)
        n = first["overall"]["n"]
        assert _stats(url)["requests"] == n == first["sent_this_run"]
        again = _run(url, out, domains=["terminal", "mcp"], variants=1)
        assert _stats(url)["requests"] == n and again["sent_this_run"] == 0
        assert again["overall"] == first["overall"]
        # a run killed after 5 predictions, before its cache was written: only the rest is sent
        journal = out / "predictions.jsonl"
        journal.write_text("".join(journal.read_text().splitlines(keepends=True)[:5]))
        (out / "cache.jsonl").unlink()
        resumed = _run(url, out, domains=["terminal", "mcp"], variants=1)
        assert _stats(url)["requests"] == 2 * n - 5 and resumed["sent_this_run"] == n - 5
        assert resumed["overall"]["accuracy"] == 100.0
    ids = [json.loads(line)["id"] for line in journal.read_text().splitlines()]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == n


def test_failed_requests_count_as_failed_probes_and_are_retried_on_resume(tmp_path: Path) -> None:
    data = _data(tmp_path, domains=["search"], variants=1)
    out = tmp_path / "run"
    with run_mock_server(MockConfig(data=[data], error_rate=1.0)) as url:
        report = _run(url, out, domains=["search"], variants=1)
    assert report["overall"]["passed"] == 0 and report["overall"]["errors"] == report["overall"]["n"]
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with run_mock_server(MockConfig(data=[data], port=port)) as url:  # the same endpoint, now healthy
        report = _run(url, out, domains=["search"], variants=1)
        assert _stats(url)["requests"] == report["overall"]["n"]
    assert report["overall"]["accuracy"] == 100.0 and report["overall"]["errors"] == 0


# -- command line ------------------------------------------------------------------------------------

def test_cli_exports_runs_and_prints_the_table(tmp_path: Path) -> None:
    data = tmp_path / "probes.jsonl"
    result = runner.invoke(app, ["eval", "probes", "--data-out", str(data), "--domains", "web,swe"])
    assert result.exit_code == 0, result.output
    assert {s.domain for s in load_samples([data])} == {"web", "swe"}
    with run_mock_server(MockConfig(data=[data])) as url:
        result = runner.invoke(app, ["eval", "probes", "--model", "mock", "--model-base-url", url, "--out",
                                     str(tmp_path / "run"), "--domains", "web", "--domains", "swe"])
    assert result.exit_code == 0, result.output
    assert "controllability" in result.output and "100.0%" in result.output
    assert (tmp_path / "run" / "report.html").is_file()


@pytest.mark.parametrize(("args", "message"), [
    (["--domains", "nosuch", "--data-out", "x.jsonl"], "no probes for domain(s) nosuch"),
    (["--domains", "android", "--data-out", "x.jsonl"], "no probes for domain(s) android"),
    ([], "give --out DIR"),
    (["--out", "run"], "--model is required"),
    (["--out", "run", "--model", "nosuchbackend"], "unknown world-model backend 'nosuchbackend'"),
    (["--out", "foreign", "--model", "retrieval"], "not an agentworld eval probes folder"),
    (["--variants", "0", "--data-out", "x.jsonl"], "--variants"),
])
def test_cli_user_errors_are_one_red_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("mine")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.run([sys.executable, "-m", "agentworld", "eval", "probes", *args], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    assert (tmp_path / "foreign" / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["foreign"]


def test_resuming_with_other_settings_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    data = _data(tmp_path, domains=["mcp"], variants=1)
    out = tmp_path / "run"
    with run_mock_server(MockConfig(data=[data])) as url:
        _run(url, out, domains=["mcp"], variants=1)
        before = {p.name: p.read_bytes() for p in out.iterdir() if p.name != LOCK_NAME}
        result = runner.invoke(app, ["eval", "probes", "--model", "mock", "--model-base-url", url, "--out",
                                     str(out), "--domains", "mcp", "--seed", "9"])
    assert result.exit_code == 2 and "seed: 0 -> 9" in result.output
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != LOCK_NAME} == before  # the writer lock


def test_write_data_never_replaces_a_users_file_but_repeats_idempotently(tmp_path: Path) -> None:
    mine = tmp_path / "mine.jsonl"
    mine.write_text('{"mine": true}\n')
    result = runner.invoke(app, ["eval", "probes", "--data-out", str(mine), "--out", str(tmp_path / "run"),
                                 "--model", "retrieval"])
    assert result.exit_code == 2 and "carries no agentworld mark" in result.output
    assert mine.read_text() == '{"mine": true}\n' and not (tmp_path / "run").exists()
    data = _data(tmp_path, domains=["swe"], variants=1)
    first = data.read_bytes()
    assert _data(tmp_path, domains=["swe"], variants=1) == data and data.read_bytes() == first
    result = runner.invoke(app, ["eval", "probes", "--data-out", str(data), "--domains", "web"])
    assert result.exit_code == 2 and data.read_bytes() == first


def test_a_damaged_journal_row_is_a_located_error(tmp_path: Path) -> None:
    data = _data(tmp_path, domains=["web"], variants=1)
    out = tmp_path / "run"
    with run_mock_server(MockConfig(data=[data])) as url:
        _run(url, out, domains=["web"], variants=1)
        with (out / "predictions.jsonl").open("a") as journal:
            journal.write('{"id": "web-balance-0", "domain": ["web"]}\n')
        result = runner.invoke(app, ["eval", "probes", "--model", "mock", "--model-base-url", url, "--out",
                                     str(out), "--domains", "web", "--variants", "1"])
    assert result.exit_code == 2, result.output
    assert "predictions.jsonl:" in result.output and "web-balance-0" in result.output

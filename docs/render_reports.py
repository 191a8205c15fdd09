"""Render every kind of agentworld report from small real inputs, offline, and screenshot each page.

    python docs/render_reports.py [--out /tmp/agentworld-reports] [--images docs/images/reports]

Inputs: rows of the shipped terminal and MCP corpora, the mock server (it replays ground truth with
injected corruption and truncation, and plays the judge), the built-in probes, the airline tool
fixture for ``synth envs``. Nothing is downloaded. The pages go to ``--out``; with ``chromium`` on
the PATH (or at /usr/bin/chromium) each is screenshotted into ``--images`` at 1280x900.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def agentworld(*args: str) -> None:
    """Run one ``agentworld`` command in the repository root; stop with its output when it fails."""
    done = subprocess.run([sys.executable, "-m", "agentworld", *args], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"agentworld {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")


def bench_data(work: Path) -> Path:
    """Eight terminal and six MCP rows of the shipped corpora, as one AgentWorldBench file."""
    from agentworld.corpus import corpus_path

    rows = [line for name, n in (("terminal", 8), ("mcp", 6))
            for line in corpus_path(name).read_text("utf-8").splitlines()[:n]]
    path = work / "bench.jsonl"
    path.write_text("\n".join(rows) + "\n", "utf-8")
    return path


def eval_runs(work: Path, data: Path, out: Path) -> None:
    """Two judged runs (retrieval without the evaluated sample; the mock with corruption), their
    report and their comparison."""
    from agentworld.corpus import corpus_path
    from agentworld.serve.config import MockConfig
    from agentworld.serve.mock_server import run_mock_server

    corpora = [x for name in ("terminal", "mcp") for x in ("--model-corpus", str(corpus_path(name)))]
    config = MockConfig(data=[data], corruption_rate=0.5, truncate_rate=0.1, malformed_judge_rate=0.1, seed=3)
    with run_mock_server(config) as url:
        judge = ["--judge-base-url", url, "--judge-model", "mock-judge", "--no-progress"]
        agentworld("eval", "run", "--data", str(data), "--model", "retrieval", "--exclude-own", *corpora,
                   "--out", str(work / "retrieval"), *judge)
        agentworld("eval", "run", "--data", str(data), "--model", "mock", "--model-base-url", url,
                   "--out", str(work / "mock"), *judge)
    agentworld("eval", "report", "--run", str(work / "retrieval"), "--out", str(out / "eval-report.html"))
    agentworld("eval", "compare", "--run", str(work / "mock"), "--run", str(work / "retrieval"),
               "--html", str(out / "eval-compare.html"), "--bootstrap", "1000")


def probes(out: Path) -> None:
    """The built-in probes, answered right except every third (which gets another probe's answer)."""
    from agentworld.eval.probes.command import generate_probes, judge
    from agentworld.eval.probes.report import summarize, write_html
    from agentworld.eval.records import PredictionRow
    from agentworld.io import JsonlJournal

    folder = out / "probes"
    folder.mkdir(parents=True, exist_ok=True)
    items = generate_probes(seed=0, variants=1)
    answers = [items[(i + 1) % len(items)].expected if i % 3 == 2 else p.expected
               for i, p in enumerate(items)]
    preds = {p.id: PredictionRow(id=p.id, domain=p.domain, prediction=a)
             for p, a in zip(items, answers, strict=True)}
    with JsonlJournal(folder / "predictions.jsonl") as journal:
        for row in preds.values():
            journal.append(row.model_dump(mode="json"))
    results = judge(items, preds)
    report = summarize(results, {"model": "example-model", "seed": 0, "variants": 1})
    shutil.copy(write_html(folder, items, results, report), out / "eval-probes.html")


def closed_loop(out: Path) -> None:
    """Two terminal tasks under two arms, the simulated observations beside the real ones."""
    from agentworld.eval.closedloop.render import write_html
    from agentworld.eval.closedloop.score import summarize

    def step(turn: int, action: str, simulated: str, real: str, rule: float) -> dict[str, object]:
        return {"turn": str(turn), "action": action, "simulated": simulated, "real": real, "rule": rule,
                "exact": simulated == real, "rubric": None}

    ls_real = "notes.txt  report.csv  scripts"
    rows = []
    for arm, wrong in (("bare", True), ("grounded", False)):
        shown = "notes.txt  report.csv" if wrong else ls_real
        steps = [step(1, "ls", shown, ls_real, 71.4 if wrong else 100.0),
                 step(2, "wc -l report.csv", "12 report.csv", "12 report.csv", 100.0)]
        rows.append({"task": "count-report-lines", "domain": "terminal", "arm": arm, "first_divergence": None,
                     "real_success": True, "sim_success": True, "agree": True,
                     "fidelity": sum(s["rule"] for s in steps) / len(steps), "rubric": None,
                     "real_steps": 2, "sim_steps": 2, "real_routed": 0, "sim_ended": "done", "steps": steps})
        steps = [step(1, "cat config.ini", "[server]\nport = 8080" if wrong else "[server]\nport = 9090",
                      "[server]\nport = 9090", 62.5 if wrong else 100.0)]
        rows.append({"task": "read-port", "domain": "terminal", "arm": arm,
                     "first_divergence": 2 if wrong else None,
                     "real_success": True, "sim_success": not wrong, "agree": not wrong,
                     "fidelity": steps[0]["rule"], "rubric": None, "real_steps": 2, "sim_steps": 1,
                     "real_routed": 0, "sim_ended": "done", "steps": steps})
    report = {"agent": "example-agent", "model": "example-world-model", "judge": None, "seed": 0,
              "tasks_finished": 2, "tasks_planned": 2, "summary": summarize(rows), "tasks": rows}
    write_html(report, out / "eval-closed-loop.html")


def synth(work: Path, out: Path) -> None:
    """``synth envs`` from the airline tool fixture (twice: one a near-duplicate), checked with the mock."""
    from agentworld.serve.config import MockConfig
    from agentworld.serve.mock_server import run_mock_server

    tools = next(ROOT.glob("tests/**/fixtures/airline_tools.json"))
    with run_mock_server(MockConfig()) as url:
        agentworld("synth", "envs", "--seeds", str(tools), "--seeds", str(tools), "--out", str(work / "envs"),
                   "--generator-model", "synth-template", "--no-progress", "--model", "mock",
                   "--model-base-url", url)
    shutil.copy(work / "envs" / "report.html", out / "synth-check.html")


def data_stats(out: Path) -> None:
    """``data stats`` of the shipped terminal corpus."""
    from agentworld.corpus import corpus_path

    corpus = corpus_path("terminal").resolve()
    shown = corpus.relative_to(ROOT) if corpus.is_relative_to(ROOT) else corpus
    agentworld("data", "stats", "--in", str(shown), "--report", str(out / "data-stats.html"))


def screenshot(pages: Path, images: Path) -> list[Path]:
    """One 1280x900 PNG per page (headless Chromium); none when Chromium is missing."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
    if not Path(browser).exists():
        print("no chromium: pages written, no screenshots")
        return []
    images.mkdir(parents=True, exist_ok=True)
    views = [(html.stem, html, 900) for html in sorted(pages.glob("*.html"))]
    whole = pages / "shots" / "eval-report-samples.html"  # the whole page, its worst sample opened
    whole.parent.mkdir(exist_ok=True)
    whole.write_text((pages / "eval-report.html").read_text("utf-8").replace('<details class="s"',
                                                                             '<details open class="s"', 1))
    views.append((whole.stem, whole, 2600))
    shots = []
    for name, html, height in views:
        png = images / f"{name}.png"
        subprocess.run([browser, "--headless", "--no-sandbox", "--hide-scrollbars", f"--screenshot={png}",
                        f"--window-size=1280,{height}", html.resolve().as_uri()], capture_output=True,
                       timeout=120, check=True)
        shots.append(png)
    return shots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "agentworld-reports")
    parser.add_argument("--images", type=Path, default=ROOT / "docs" / "images" / "reports")
    args = parser.parse_args()
    out: Path = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    work = out / "inputs"
    work.mkdir()
    eval_runs(work, bench_data(work), out)
    synth(work, out)
    probes(out)
    closed_loop(out)
    data_stats(out)
    print(json.dumps({"pages": sorted(p.name for p in out.glob("*.html")),
                      "images": [str(p) for p in screenshot(out, args.images)]}, indent=2))


if __name__ == "__main__":
    main()

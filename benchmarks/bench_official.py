"""``agentworld eval run`` side by side with the official ``eval.py`` on the same mock endpoints.

Why: the official harness sends one request at a time; a run of AgentWorldBench against a real
endpoint is mostly waiting. This measures how much of that waiting ``eval run`` removes, start-up
included, on real recorded terminal samples.

Setup: ``--samples`` rows of the shipped terminal corpus; one mock OpenAI-compatible server
(``agentworld serve mock``, its own process) answering every request after ``--latency-ms`` and
breaking ``--malformed-judge-rate`` of the judge verdicts (so both harnesses retry some). Timed,
each as fresh processes from the shell's point of view (interpreter start-up and imports count):

* ``python -m agentworld eval run … --concurrency C`` (infer + judge + score, one process), in
  ``--repeats`` fresh run folders (the median counts);
* with ``--official PATH`` (a checkout of QwenLM/Qwen-AgentWorld): ``python eval/eval.py infer``
  then ``python eval/eval.py judge`` (two processes).

Prints both wall times, the requests each sent, the Overall each printed (the same mock verdicts,
so they should agree), the waiting floor of the pipelined run (``ceil(samples / C)`` rounds of
predictions, then the last judging) and the ratio; exits 1 when the ratio is under ``--target``
(only when the official half ran).

    python benchmarks/bench_official.py [--official /tmp/qaw] [--samples 126] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from agentworld.corpus import corpus_path

URL = re.compile(r"https?://\S+/v1")


@dataclass(frozen=True)
class Timing:
    wall_s: float
    requests: int
    overall: float | None


def write_data(folder: Path, n: int) -> Path:
    """The first ``n`` rows of the shipped terminal corpus as ``terminal_test.jsonl`` (the official glob)."""
    lines = corpus_path("terminal").read_text("utf-8").splitlines()
    if len(lines) < n:
        raise SystemExit(f"the shipped corpus has {len(lines)} rows, fewer than --samples {n}")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "terminal_test.jsonl"
    path.write_text("".join(line + "\n" for line in lines[:n]), "utf-8")
    return path


def start_mock(data: Path, latency_ms: float, malformed: float) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "agentworld", "serve", "mock", "--data", str(data), "--latency-ms",
               str(latency_ms), "--malformed-judge-rate", str(malformed), "--seed", "0"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        found = URL.search(line)
        if found:
            return proc, found.group(0)
    proc.kill()
    raise SystemExit("the mock server did not announce its URL")


def served(url: str) -> int:
    return int(httpx.get(url.removesuffix("/v1") + "/_mock/stats").json().get("requests", 0))


def timed(commands: list[list[str]], cwd: Path | None = None) -> tuple[float, str]:
    """Run the commands one after the other; wall time of all of them and their joined output."""
    output = []
    started = time.perf_counter()
    for command in commands:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=os.environ.copy())
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
        output.append(done.stdout + done.stderr)
    return time.perf_counter() - started, "".join(output)


def run_ours(data: Path, out: Path, url: str, concurrency: int) -> Timing:
    before = served(url)
    wall, _ = timed([[sys.executable, "-m", "agentworld", "eval", "run", "--data", str(data),
                      "--model-base-url", url, "--model", "wm", "--judge-base-url", url, "--judge-model",
                      "judge", "--out", str(out), "--concurrency", str(concurrency), "--no-progress"]])
    scores = json.loads((out / "scores.json").read_text("utf-8"))
    return Timing(wall, served(url) - before, scores["overall"]["sample_weighted"])


def run_official(repo: Path, data: Path, out: Path, url: str) -> Timing:
    script = repo / "eval" / "eval.py"
    if not script.is_file():
        raise SystemExit(f"{script}: not found (give --official the root of a Qwen-AgentWorld checkout)")
    before = served(url)
    wall, output = timed([
        [sys.executable, str(script), "infer", "--data-dir", str(data.parent), "--model-base-url", url,
         "--model-name", "wm", "--output-dir", str(out)],
        [sys.executable, str(script), "judge", "--predictions", str(out / "predictions.jsonl"),
         "--judge-base-url", url, "--judge-model", "judge", "--output-dir", str(out)],
    ], cwd=script.parent)
    printed = re.findall(r"Overall: ([0-9.]+)", output)
    return Timing(wall, served(url) - before, float(printed[-1]) if printed else None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official", type=Path, help="root of a QwenLM/Qwen-AgentWorld checkout; "
                        "without it only 'eval run' is timed")
    parser.add_argument("--samples", type=int, default=126)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--malformed-judge-rate", type=float, default=0.1)
    parser.add_argument("--target", type=float, default=10.0, help="required speed-up over eval.py")
    parser.add_argument("--repeats", type=int, default=3, help="eval run is timed this often (fresh run "
                        "folders); its median counts, since one short run on a shared machine is noisy")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = write_data(Path(tmp) / "data", args.samples)
        mock, url = start_mock(data, args.latency_ms, args.malformed_judge_rate)
        try:
            runs = [run_ours(data, Path(tmp) / f"ours{i}", url, args.concurrency)
                    for i in range(args.repeats)]
            official = (run_official(args.official, data, Path(tmp) / "official", url)
                        if args.official else None)
        finally:
            mock.terminate()
            mock.wait(timeout=10)
    floor = (math.ceil(args.samples / args.concurrency) + 1) * args.latency_ms / 1000
    return report(args, runs, official, floor)


def _fmt(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else "-" if value is None else str(value)


def report(args: argparse.Namespace, runs: list[Timing], official: Timing | None, floor: float) -> int:
    ours = sorted(runs, key=lambda r: r.wall_s)[len(runs) // 2]
    print(f"{args.samples} real terminal samples, infer + judge, mock latency {args.latency_ms:.0f} ms, "
          f"{args.malformed_judge_rate:.0%} malformed verdicts; wall times include process start-up")
    print(f"{'':26}{'eval.py':>12}{'eval run c=' + str(args.concurrency):>16}")
    rows = (("wall time (s)", "wall_s"), ("requests", "requests"), ("Overall (sample-wtd)", "overall"))
    for label, key in rows:
        theirs = getattr(official, key) if official else None
        print(f"{label:26}{_fmt(theirs):>12}{_fmt(getattr(ours, key)):>16}")
    print(f"eval run wall times: {', '.join(f'{r.wall_s:.2f}' for r in runs)} s (the median is shown above)")
    print(f"waiting floor of eval run: {floor:.2f} s ((ceil(samples / concurrency) + 1) x latency: rounds of "
          "predictions, then the last judging; retries of malformed verdicts add to it)")
    if official is None:
        print("official eval.py not timed (give --official PATH to a Qwen-AgentWorld checkout)")
        return 0
    ratio = official.wall_s / ours.wall_s
    print(f"speed-up over eval.py: {ratio:.1f}x (target >= {args.target:.0f}x)")
    ok = ratio >= args.target
    print("target met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""An ``eval run`` over a pool of three mock world-model endpoints, one of them killed mid-run.

What it measures: three ``agentworld serve mock`` processes (``--latency-ms``) on 127.0.0.1 serve the
ground truth of ``--samples`` terminal samples; ``eval run --no-judge`` sends them through a pool of the
three; once the second server has answered ``--kill-after`` requests it is killed (SIGKILL). Printed: the
pool's per-endpoint stats (``endpoints.json``), the requests each mock server counted itself, how many
samples failed, and the wall time; then the same without the kill, for the spread alone.

Run (from the repository root)::

    PYTHONPATH=src python benchmarks/bench_pool.py [--samples 600] [--concurrency 24] [--latency-ms 100]
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from agentworld.eval.config import EvalConfig
from agentworld.eval.runner import run_eval
from agentworld.io import read_journal
from agentworld.models.pool import render_stats


def write_data(path: Path, samples: int) -> Path:
    """Terminal samples, three turns per trajectory, each with a distinct action and observation."""
    rows = []
    for t in range(-(-samples // 3)):
        prompts = [f"**Action:**\n```json\n[{{\"keystrokes\": \"echo t{t}-{j}\\n\"}}]\n```" for j in range(3)]
        responses = [f"**Environment Observation:**\nt{t}-{j}\nroot@box:/app#" for j in range(3)]
        for k in range(1, 4):
            rows.append({"task": "bench/terminal", "id": f"t{t}-{k}", "prompt": prompts,
                         "response": responses, "current_prompt": "", "system_str": "You simulate terminal.",
                         "turn_idx": k, "total_turns": 3})
    path.mkdir(parents=True, exist_ok=True)
    (path / "terminal_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:samples]))
    return path


def start_mock(data: Path, latency_ms: float) -> tuple[str, subprocess.Popen[str]]:
    proc = subprocess.Popen([sys.executable, "-m", "agentworld", "serve", "mock", "--data", str(data),
                             "--latency-ms", str(latency_ms)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    match = re.search(r"(http://\S+/v1)", proc.stdout.readline())
    assert match, "mock server did not start"
    return match.group(1), proc


def served(url: str) -> int:
    return int(httpx.get(url.removesuffix("/v1") + "/_mock/stats", timeout=10).json().get("requests", 0))


def run(data: Path, out: Path, args: argparse.Namespace, kill: bool) -> None:
    mocks = [start_mock(data, args.latency_ms) for _ in range(3)]
    urls = [url for url, _ in mocks]
    try:
        for url in urls:
            while True:
                try:
                    served(url)
                    break
                except httpx.TransportError:
                    time.sleep(0.05)
        done = threading.Event()

        def killer() -> None:
            while not done.is_set():
                try:
                    if served(urls[1]) >= args.kill_after:
                        mocks[1][1].send_signal(signal.SIGKILL)
                        return
                except httpx.TransportError:
                    pass
                done.wait(0.005)

        thread = threading.Thread(target=killer)
        if kill:
            thread.start()
        started = time.perf_counter()
        try:
            run_eval(EvalConfig(data=[data], model="wm", model_base_url=",".join(urls), out=out,
                                no_judge=True, progress=False, concurrency=args.concurrency, backoff_s=0.01))
        finally:
            done.set()
            if kill:
                thread.join()
        wall = time.perf_counter() - started
        counts = [served(url) if proc.poll() is None else None for url, proc in mocks]
    finally:
        for _, proc in mocks:
            proc.kill()
            proc.wait()
    rows = list(read_journal(out / "predictions.jsonl"))
    failed = sum(1 for r in rows if r.get("error") or not r.get("prediction"))
    stats = json.loads((out / "endpoints.json").read_text())["endpoints"]
    title = f"one killed after {args.kill_after} requests" if kill else "all healthy"
    print(f"\n== {title}: {len(rows)} samples, {failed} failed, {wall:.2f} s wall, "
          f"concurrency {args.concurrency}")
    print(render_stats(stats))
    counted = ", ".join("killed" if c is None else str(c) for c in counts)
    print("requests counted by the mock servers:", counted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=600)
    parser.add_argument("--concurrency", type=int, default=24)
    parser.add_argument("--latency-ms", type=float, default=100)
    parser.add_argument("--kill-after", type=int, default=50)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-pool-"))
    data = write_data(root / "data", args.samples)
    run(data, root / "killed", args, kill=True)
    run(data, root / "healthy", args, kill=False)


if __name__ == "__main__":
    main()

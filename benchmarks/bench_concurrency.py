"""Concurrency benchmark of the eval harness against one mock server with fixed latency.

Builds ``--samples`` synthetic terminal rows, starts ONE mock OpenAI-compatible server (its own
process, so it does not compete with the harness for the GIL) answering after ``--latency-ms``,
then runs the harness at concurrency 1 and ``--concurrency`` against it and prints wall time,
requests, throughput, the speed-up ratio and the harness overhead per request,
``(wall - requests * latency / concurrency) / requests``. Exits 1 when a target is missed
(speed-up >= 20x, overhead < 2 ms at the high concurrency).

    python benchmarks/bench_concurrency.py [--samples 800] [--judge]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from agentworld.eval import EvalConfig, model_request, run_eval
from agentworld.models.openai_compat import OpenAIBackend
from agentworld.schema import load_samples

SERVER = ("import sys; from agentworld.serve.mock_server import MockConfig, serve_forever; "
          "serve_forever(MockConfig(data=[sys.argv[1]], latency_ms=float(sys.argv[2])), "
          "announce=lambda url: print(url, flush=True))")


def write_samples(folder: Path, n: int, turns: int = 4) -> Path:
    """``n`` terminal-like rows: trajectories of ``turns`` echo commands and their screens."""
    rows = []
    for t in range((n + turns - 1) // turns):
        actions = [json.dumps([{"keystrokes": f"echo run-{t}-{j}\n", "duration": 0.1}], indent=2)
                   for j in range(turns)]
        prompts = [f"**Action:**\n```json\n{action}\n```" for action in actions]
        responses = ["**Environment Observation:**\n"
                     f"root@box:/app# echo run-{t}-{j}\nrun-{t}-{j}\nroot@box:/app#" for j in range(turns)]
        rows += [{"task": "bench/terminal", "id": f"b{t}-{k}", "prompt": prompts, "response": responses,
                  "system_str": "You simulate a Linux terminal.", "turn_idx": k, "total_turns": turns}
                 for k in range(1, turns + 1)]
    path = folder / "terminal_test.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:n]))
    return path


def requests_served(url: str) -> int:
    return int(httpx.get(url.removesuffix("/v1") + "/_mock/stats").json().get("requests", 0))


def measure(data: Path, out: Path, url: str, concurrency: int, judge: bool,
            latency_s: float) -> dict[str, float]:
    """One timed run; returns wall time, requests, throughput and overhead per request."""
    config = EvalConfig(data=[data], out=out, model="mock", model_base_url=url, judge_base_url=url,
                        judge_model="judge", no_judge=not judge, concurrency=concurrency, progress=False,
                        rules=False)
    before = requests_served(url)
    started = time.perf_counter()
    run_eval(config)
    wall = time.perf_counter() - started
    requests = requests_served(url) - before
    ideal = requests * latency_s / concurrency
    return {"concurrency": concurrency, "wall_s": wall, "requests": requests, "rps": requests / wall,
            "ideal_s": ideal, "overhead_ms": (wall - ideal) / requests * 1000}


def measure_backend(data: Path, url: str, concurrency: int) -> float:
    """Wall time of the bare backend sending the same requests (no harness): what the harness adds to."""
    requests = [model_request(s, "mock", 32768, 0.6) for s in load_samples([data])]

    async def send_all() -> float:
        backend = OpenAIBackend(url, "mock", concurrency=concurrency)
        started = time.perf_counter()
        await asyncio.gather(*(backend.complete(r) for r in requests))
        wall = time.perf_counter() - started
        await backend.aclose()
        return wall

    return asyncio.run(send_all())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=800,
                        help="samples per run; enough that start-up (loading, scoring) is amortised")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--judge", action="store_true", help="infer + judge (two requests per sample)")
    args = parser.parse_args()
    latency = args.latency_ms / 1000
    with tempfile.TemporaryDirectory() as tmp:
        data = write_samples(Path(tmp), args.samples)
        server = subprocess.Popen([sys.executable, "-c", SERVER, str(data), str(args.latency_ms)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            measure(data, Path(tmp) / "warmup", url, args.concurrency, args.judge, latency)
            runs = [measure(data, Path(tmp) / f"c{c}", url, c, args.judge, latency)
                    for c in (1, args.concurrency)]
            bare = None if args.judge else measure_backend(data, url, args.concurrency)
        finally:
            server.terminate()
            server.wait(timeout=10)
    return report(runs, args, bare)


def report(runs: list[dict[str, float]], args: argparse.Namespace, bare: float | None) -> int:
    low, high = runs
    speedup = low["wall_s"] / high["wall_s"]
    print(f"{args.samples} samples, {'infer+judge' if args.judge else 'inference only'}, "
          f"mock latency {args.latency_ms:.0f} ms")
    print(f"{'':24}{'c=1':>12}{'c=' + str(args.concurrency):>12}")
    for label, key, fmt in (("wall time (s)", "wall_s", "{:.2f}"), ("requests", "requests", "{:.0f}"),
                            ("throughput (req/s)", "rps", "{:.1f}"), ("ideal wall (s)", "ideal_s", "{:.2f}"),
                            ("overhead / request (ms)", "overhead_ms", "{:.2f}")):
        print(f"{label:24}{fmt.format(low[key]):>12}{fmt.format(high[key]):>12}")
    print(f"speed-up: {speedup:.1f}x (target >= 20x); overhead target < 2 ms at c={args.concurrency}")
    if bare is not None:
        print(f"bare backend, same requests at c={args.concurrency}: {bare:.2f} s; the harness adds "
              f"{(high['wall_s'] - bare) / high['requests'] * 1000:.2f} ms/request on top of it")
    ok = speedup >= 20 and high["overhead_ms"] < 2
    print("targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

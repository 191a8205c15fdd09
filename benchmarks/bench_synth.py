"""Scale benchmark of ``agentworld synth envs``: N environments against the mock generator.

Seeds are the tau-bench airline trajectories in ``../shared/data`` (40), copied under as many file
names as it takes to have ``--envs`` distinct seeds, so every environment sends its own requests.
ONE mock OpenAI-compatible server (its own process, ``--synth``: it answers every stage prompt
with the offline template's JSON after ``--latency-ms``) is the generator; ``agentworld synth envs``
runs as its own process at ``--concurrency``, once with a tenth of the seeds and once with all of
them. For each run it prints wall time, peak memory (the command's max RSS) and generator requests,
per environment, with the floor beside the wall time: ``requests × latency / concurrency``, what the
run would take if the generator's latency were the only cost. The memory slope between the two
runs is what each further environment costs.

    nice python benchmarks/bench_synth.py [--envs 1000] [--latency-ms 50] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

SERVER = ("import sys; from agentworld.serve.mock_server import MockConfig, serve_forever; "
          "serve_forever(MockConfig(synth=True, latency_ms=float(sys.argv[1])), "
          "announce=lambda url: print(url, flush=True))")
TAU = Path(__file__).resolve().parents[2] / "shared" / "data" / "tau_bench_airline_gpt4o_dev.json"


def write_seeds(folder: Path, envs: int, source: Path) -> list[Path]:
    """Copies of ``source`` under distinct names, enough for ``envs`` seeds (``--limit`` cuts the rest)."""
    per_file = len(json.loads(source.read_text()))
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(-(-envs // per_file)):
        path = folder / f"tau_airline_{i:04d}.json"
        shutil.copyfile(source, path)
        paths.append(path)
    return paths


def mock_stats(url: str) -> dict[str, int]:
    return dict(httpx.get(url.removesuffix("/v1") + "/_mock/stats").json())


def run_synth(seeds: list[Path], out: Path, url: str, envs: int, concurrency: int,
              latency_s: float) -> dict[str, Any]:
    """One ``synth envs`` run in its own process: wall time, its peak RSS, requests, kept environments."""
    before = mock_stats(url)
    seed_args = [a for s in seeds for a in ("--seed-files", str(s))]
    cmd = [sys.executable, "-m", "agentworld", "synth", "envs", *seed_args,
           "--out", str(out), "--generator-model", "mock", "--generator-base-url", url,
           "--concurrency", str(concurrency), "--limit", str(envs), "--no-progress"]
    log = out.with_suffix(".log")
    with log.open("w") as sink:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT,
                                env={**os.environ, "AGENTWORLD_GENERATOR_API_KEY": "bench"})
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage (max RSS)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
    output = log.read_text()
    if proc.returncode != 0:
        raise SystemExit(f"synth envs failed ({proc.returncode}):\n{output[-3000:]}")
    after = mock_stats(url)
    summary = json.loads((out / "summary.json").read_text())
    requests = after.get("requests", 0) - before.get("requests", 0)
    reasons = ", ".join(f"{k} {v}" for k, v in summary["rejected_by_reason"].items())
    return {"envs": summary["environments"], "generated": summary["generated"], "wall_s": wall,
            "requests": requests, "kept": summary["kept"], "reasons": reasons or "none",
            "floor_s": requests * latency_s / concurrency, "peak_rss_mb": usage.ru_maxrss / 1024}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=1000, help="environments of the large run")
    parser.add_argument("--latency-ms", type=float, default=50.0, help="mock generator latency per request")
    parser.add_argument("--concurrency", type=int, default=64, help="synth envs --concurrency")
    parser.add_argument("--seeds", type=Path, default=TAU, help="seed file copied to make the seeds")
    args = parser.parse_args()
    latency = args.latency_ms / 1000
    sizes = sorted({max(1, args.envs // 10), args.envs})
    with tempfile.TemporaryDirectory() as tmp:
        seeds = write_seeds(Path(tmp) / "seeds", args.envs, args.seeds.resolve())
        server = subprocess.Popen([sys.executable, "-c", SERVER, str(args.latency_ms)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            runs: list[dict[str, Any]] = [
                run_synth(seeds, Path(tmp) / f"out{n}", url, n, args.concurrency, latency) for n in sizes]
        finally:
            server.terminate()
            server.wait(timeout=10)
    report(runs, args)
    return 0


def report(runs: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(f"synth envs against the mock generator: latency {args.latency_ms:.0f} ms, concurrency "
          f"{args.concurrency}, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'':30}" + "".join(f"{str(int(r['envs'])) + ' envs':>14}" for r in runs))
    rows = (("environments generated", lambda r: f"{r['generated']:.0f}"),
            ("kept by the world checks", lambda r: f"{r['kept']:.0f}"),
            ("wall time (s)", lambda r: f"{r['wall_s']:.1f}"),
            ("floor (s)", lambda r: f"{r['floor_s']:.1f}"),
            ("time / environment (ms)", lambda r: f"{r['wall_s'] / r['envs'] * 1000:.1f}"),
            ("floor / environment (ms)", lambda r: f"{r['floor_s'] / r['envs'] * 1000:.1f}"),
            ("requests", lambda r: f"{r['requests']:.0f}"),
            ("requests / environment", lambda r: f"{r['requests'] / r['envs']:.2f}"),
            ("peak RSS (MiB)", lambda r: f"{r['peak_rss_mb']:.0f}"),
            ("peak RSS / environment (KiB)", lambda r: f"{r['peak_rss_mb'] * 1024 / r['envs']:.0f}"))
    for label, cell in rows:
        print(f"{label:30}" + "".join(f"{cell(r):>14}" for r in runs))
    if len(runs) == 2:
        small, large = runs
        slope = (large["peak_rss_mb"] - small["peak_rss_mb"]) * 1024 / (large["envs"] - small["envs"])
        per_env = (large["wall_s"] - small["wall_s"]) / (large["envs"] - small["envs"]) * 1000
        floor = (large["floor_s"] - small["floor_s"]) / (large["envs"] - small["envs"]) * 1000
        print(f"per further environment (slope between the runs, start-up excluded): {per_env:.1f} ms "
              f"(floor {floor:.1f} ms), {slope:.1f} KiB of RSS")
    print(f"rejections of the large run by reason: {runs[-1]['reasons']}")


if __name__ == "__main__":
    sys.exit(main())

"""One huge row through ``eval run --model retrieval --no-judge``: does the cost grow with its size?

Why: a 200 MB observation cost more than four minutes (50 MB took 28 s) because the rule tier
masked, classified and counted every line of the truth once per rule and per trivial baseline,
with a line cache that stops helping once the lines are distinct. The rule tier now compares at most
``MAX_SCORED_CHARS`` of each text and records the cap in the row's score; what is left (reading,
hashing, copying the row) is linear.

Setup: a data file of two terminal rows, one whose observation is ``SIZE`` MB of distinct log lines
(with timestamps and pids, what the rule tier masks) and one small; ``eval run`` runs in a fresh
process on it (``AGENTWORLD_MAX_INPUT_BYTES`` raised past the row). Prints, per size: seconds, seconds
per MB, the ratio to the smallest size (a linear cost keeps seconds per MB flat) and, with
``--baseline-src``, the same run on another checkout and the before/after ratio.

    python benchmarks/bench_row_size.py [--sizes 1 10 50 200] [--baseline-src /path/to/old/src]
        [--timeout-s 600]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ["alpha", "beta", "gamma", "delta", "1234", "2024-01-01T10:00:00Z", "pid 4242", "/usr/lib", "error:"]


def write_rows(path: Path, megabytes: float) -> None:
    """Two rows: ``megabytes`` MB of distinct log lines as one observation, and a small one."""
    rng = random.Random(0)
    lines, size = [], 0
    while size < megabytes * 1e6:
        line = " ".join(rng.choice(WORDS) for _ in range(8)) + f" {size}"
        lines.append(line)
        size += len(line) + 1
    marker = "**Environment Observation:**\nroot@box:/app# "
    big = f"{marker}cat big.log\n" + "\n".join(lines) + "\nroot@box:/app# "
    small = "**Environment Observation:**\nroot@box:/app# ls\nbig.log\nroot@box:/app# "
    rows = [{"task": "terminal", "id": "big-t1", "prompt": ["**Action:**\n```bash\ncat big.log\n```"],
             "response": [big]},
            {"task": "terminal", "id": "small-t1", "prompt": ["**Action:**\n```bash\nls\n```"],
             "response": [small]}]
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps({**row, "system_str": "You simulate a terminal.", "turn_idx": 1,
                                     "total_turns": 1}) + "\n")


def run(data: Path, out: Path, src: str | None, timeout_s: float) -> float | None:
    """Seconds of one ``eval run`` (None past ``timeout_s``)."""
    env = {**os.environ, "AGENTWORLD_MAX_INPUT_BYTES": str(4 << 30), "NO_COLOR": "1"}
    if src:
        env["PYTHONPATH"] = src
    cmd = [sys.executable, "-m", "agentworld", "eval", "run", "--model", "retrieval", "--no-judge",
           "--no-progress", "--data", str(data), "--out", str(out)]
    start = time.monotonic()
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        raise SystemExit(f"eval run failed ({done.returncode}): {done.stderr[-2000:]}")
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 10, 50, 200], help="row sizes, MB")
    parser.add_argument("--baseline-src", help="another checkout's src/ to run the same rows on (before)")
    parser.add_argument("--timeout-s", type=float, default=600, help="give up on one run after this long")
    args = parser.parse_args()
    print(f"{'MB':>6} {'after s':>9} {'s/MB':>7} {'x smallest':>10}"
          + (f" {'before s':>9} {'before/after':>12}" if args.baseline_src else ""))
    first = None
    with tempfile.TemporaryDirectory(prefix="aw-bench-row-") as scratch:
        for n, size in enumerate(args.sizes):
            data = Path(scratch) / f"rows-{size:g}.jsonl"
            write_rows(data, size)
            after = run(data, Path(scratch) / f"after-{n}", None, args.timeout_s)
            first = first or after
            line = (f"{size:>6g} {_s(after):>9} {_per(after, size):>7} "
                    f"{(after / first if after and first else float('nan')):>10.2f}")
            if args.baseline_src:
                before = run(data, Path(scratch) / f"before-{n}", args.baseline_src, args.timeout_s)
                ratio = (f"{before / after:.1f}" if before and after
                         else f">{args.timeout_s / (after or 1):.1f}")
                line += f" {_s(before, args.timeout_s):>9} {ratio:>12}"
            print(line, flush=True)
            data.unlink()


def _s(seconds: float | None, limit: float | None = None) -> str:
    return f"{seconds:.1f}" if seconds is not None else f">{limit:.0f}" if limit else "-"


def _per(seconds: float | None, size: float) -> str:
    return f"{seconds / size:.2f}" if seconds is not None else "-"


if __name__ == "__main__":
    main()

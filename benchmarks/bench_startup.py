"""Start-up time of the ``agentworld`` command against the floor of importing its CLI library.

    python benchmarks/bench_startup.py [--runs 15]

Each command is run ``--runs`` times as a fresh process (the same interpreter as this script);
the median wall time is printed side by side with ``python -c "import typer"`` (what any typer
CLI pays before its own code runs), with the ratio. The goal is ``agentworld --help`` within 2×
of that floor; sub-command help pays for its own config module only. Exits non-zero when the
root help misses the goal.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS: list[list[str]] = [
    ["--help"], ["--version"], ["eval", "run", "--help"], ["data", "process", "--help"],
    ["serve", "http", "--help"], ["train", "rollout", "--help"], ["record", "--help"],
    ["record", "terminal", "--help"], ["shell", "--help"], ["demo", "--help"],
]


def _median_s(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15, help="fresh processes per command")
    args = parser.parse_args()
    script = shutil.which("agentworld", path=str(Path(sys.executable).parent))
    entry = [script] if script else [sys.executable, "-m", "agentworld"]
    floor = _median_s([sys.executable, "-c", "import typer"], args.runs)
    print(f"{'command':<34} {'median':>9} {'× floor':>8}")
    label = 'python -c "import typer" (floor)'
    print(f"{label:<34} {floor * 1000:>7.0f}ms {1.0:>8.2f}")
    root_ratio = 0.0
    for command in COMMANDS:
        seconds = _median_s([*entry, *command], args.runs)
        ratio = seconds / floor
        if command == ["--help"]:
            root_ratio = ratio
        print(f"{'agentworld ' + ' '.join(command):<34} {seconds * 1000:>7.0f}ms {ratio:>8.2f}")
    verdict = "ok" if root_ratio <= 2.0 else "MISSED"
    print(f"\nagentworld --help is {root_ratio:.2f}x the floor (goal: within 2x): {verdict}")
    sys.exit(0 if root_ratio <= 2.0 else 1)


if __name__ == "__main__":
    main()

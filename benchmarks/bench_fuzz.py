"""The fuzz suite's long profile: many more generated hostile cases per target than CI runs.

Why a benchmark: CI runs ``tests/fuzz/`` in the ``fuzz-ci`` profile (a few dozen cases per target,
about a minute in all) so that it stays inside its time budget; a class of hostile input that only one
case in a few hundred reaches needs the long profile (``fuzz-long``: ``AGENTWORLD_FUZZ_EXAMPLES`` cases
per test, 400 unless set, not derandomised, so each run draws new cases). This runs both profiles in
one go and prints, per target, the cases each ran, how many broke a property, and the wall time and
cases per second of each profile side by side.

    python benchmarks/bench_fuzz.py [--examples 400] [--only-long] [-k EXPR]

Exit status 1 when any case broke (the failing test and its shrunk case are in pytest's output).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_profile(profile: str, examples: int | None, keyword: str | None) -> tuple[dict, float, int]:
    """``(tally, seconds, pytest's exit code)`` of one run of ``tests/fuzz`` under ``profile``."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "tally.json"
        env = {**os.environ, "HYPOTHESIS_PROFILE": profile, "AGENTWORLD_FUZZ_REPORT": str(report)}
        if examples is not None:
            env["AGENTWORLD_FUZZ_EXAMPLES"] = str(examples)
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout", "3600",
               "tests/fuzz"]
        if keyword:
            cmd += ["-k", keyword]
        start = time.monotonic()
        code = subprocess.run(cmd, cwd=ROOT, env=env, check=False).returncode
        seconds = time.monotonic() - start
        tally = json.loads(report.read_text()) if report.exists() else {"cases": {}, "found": {}}
    return tally, seconds, code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=400, help="cases per test in the long profile")
    parser.add_argument("--only-long", action="store_true", help="skip the CI profile's run")
    parser.add_argument("-k", dest="keyword", default=None, help="pytest -k expression (a subset)")
    args = parser.parse_args()
    runs = {}
    if not args.only_long:
        runs["fuzz-ci"] = run_profile("fuzz-ci", None, args.keyword)
    runs["fuzz-long"] = run_profile("fuzz-long", args.examples, args.keyword)
    targets = sorted({t for tally, _, _ in runs.values() for t in tally["cases"]})
    header = f"{'target':<46}" + "".join(f"{name + ' cases':>18}{'broke':>7}" for name in runs)
    print("\n" + header)
    for target in targets:
        cells = "".join(f"{tally['cases'].get(target, 0):>18}{tally['found'].get(target, 0):>7}"
                        for tally, _, _ in runs.values())
        print(f"{target:<46}{cells}")
    for name, (tally, seconds, _) in runs.items():
        cases = sum(tally["cases"].values())
        print(f"{name}: {cases} cases in {seconds:.0f} s ({cases / max(seconds, 1e-9):.1f} cases/s)")
    if len(runs) == 2:
        (ci, ci_s, _), (long, long_s, _) = runs["fuzz-ci"], runs["fuzz-long"]
        ratio = sum(long["cases"].values()) / max(sum(ci["cases"].values()), 1)
        print(f"long / ci: {ratio:.1f}x the cases, {long_s / max(ci_s, 1e-9):.1f}x the time")
    return 1 if any(code != 0 for _, _, code in runs.values()) else 0


if __name__ == "__main__":
    sys.exit(main())

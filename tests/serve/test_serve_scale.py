"""Thousands of sessions: the servers' garbage-collector settings, and the scale benchmark kept runnable.

The figures themselves live in ``benchmarks/bench_scale.py`` (timings are not asserted in tests);
here: a server process really runs with its start-up frozen and the raised thresholds (at Python's
defaults a 1,000-session ``serve mcp`` spent 9.9 s in collections, the worst 0.84 s with the event
loop stopped), and the benchmark runs end to end at a small size with every step answered.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from agentworld.serve.net import GC_THRESHOLDS

BENCH = Path(__file__).parents[2] / "benchmarks" / "bench_scale.py"


def test_tune_gc_freezes_start_up_and_raises_the_thresholds() -> None:
    code = ("import gc; from agentworld.serve.net import tune_gc; before = gc.get_threshold(); tune_gc(); "
            "print(before, gc.get_threshold(), gc.get_freeze_count() > 10_000)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          check=True)
    assert done.stdout.split(") (") == ["(700, 10, 10", f"{', '.join(map(str, GC_THRESHOLDS))}) True\n"]


def test_bench_scale_runs_every_surface_without_errors() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--sessions", "12", "--steps", "2", "--rate", "30",
                           "--latency-ms", "50", "--target-p99-ms", "1e9"],
                          capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {m.group(1): m.groups() for m in re.finditer(
        r"^\s*(http|mcp-modern|mcp)\s+12\s+(\d+)\s.*\s(\d+)\s+[\d.]+ / [\d.]+ / [\d.]+$", done.stdout, re.M)}
    assert set(rows) == {"http", "mcp", "mcp-modern"}, done.stdout
    assert all(steps == "24" and errors == "0" for _, steps, errors in rows.values()), done.stdout

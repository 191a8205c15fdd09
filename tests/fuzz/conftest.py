"""The fuzz suite's settings and tally.

Two hypothesis profiles: ``fuzz-ci`` (the default: a few dozen cases per target, so the whole suite
adds about two minutes to CI) and ``fuzz-long`` (``HYPOTHESIS_PROFILE=fuzz-long``, what
``benchmarks/bench_fuzz.py`` runs). At the end of a run the cases each target ran, and how many of
them broke a property, are printed (and written as JSON to ``$AGENTWORLD_FUZZ_REPORT`` when set).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, settings

import fuzz_harness

_QUIET = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large]
settings.register_profile("fuzz-ci", max_examples=int(os.environ.get("AGENTWORLD_FUZZ_EXAMPLES", "25")),
                          deadline=None, suppress_health_check=_QUIET, derandomize=True, database=None)
settings.register_profile("fuzz-long", max_examples=int(os.environ.get("AGENTWORLD_FUZZ_EXAMPLES", "400")),
                          deadline=None, suppress_health_check=_QUIET)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fuzz-ci"))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not fuzz_harness.CASES:
        return
    terminalreporter.section("fuzz: generated cases per target")
    for target, cases in sorted(fuzz_harness.CASES.items()):
        terminalreporter.write_line(f"{target:<44} {cases:>6} cases  {fuzz_harness.FOUND[target]:>4} broke")
    report = os.environ.get("AGENTWORLD_FUZZ_REPORT")
    if report:
        Path(report).write_bytes(orjson.dumps({"cases": dict(fuzz_harness.CASES),
                                               "found": dict(fuzz_harness.FOUND)}))

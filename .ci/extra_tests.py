"""Runs exactly the tests that the README's test command skipped for a missing extra, with every extra in.

Why: the README's install brings the ``dev`` and ``web`` extras only, so its test command skips what needs
``train``, ``ray``, ``verifiers`` or ``docs``, each skip naming its extra (``tests/extras_needed.py``).
``.ci/run`` runs the README's commands as written, installs every extra, then runs this, which reads what
that run skipped (pytest's cache, ``agentworld/skips``) and

- refuses a skip for a missing package that names no extra: such a test would run nowhere;
- runs the skipped tests and modules, by node id: the set run here is the set skipped there;
- fails where one of them still skips for a missing extra.

Usage: ``.venv/bin/python .ci/extra_tests.py``, right after ``.venv/bin/pytest -q`` and the extras' install.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import extras_needed  # noqa: E402  (tests/ is not a package; pytest puts it on the path, this does too)

RECORD = ROOT / ".pytest_cache" / "v" / extras_needed.CACHE_KEY
PACKAGE_MISSING = re.compile(r"could not import|no module named|not installed|pip install|install\.sh", re.I)
"""A skip reason that says a Python package is absent."""
OUTSIDE_EXTRAS = {
    "tests/serve/test_adapters.py::test_openenv_environment_and_app":
        "OpenEnv 0.10 pins mcp<2: it runs from its own venv, never beside agentworld (no extra has it)",
}
"""Skips for a package that no extra can bring, and why."""


def read_record() -> dict[str, Any]:
    if not RECORD.is_file():
        raise SystemExit(f"extra_tests: no record of the last pytest run's skips ({RECORD}): "
                         "run .venv/bin/pytest -q first")
    return dict(json.loads(RECORD.read_text(encoding="utf-8")))


def unclaimed(record: dict[str, Any]) -> list[str]:
    """The skips for a missing package that name no extra (so no later run would lift them)."""
    return [f"{node}: {why}" for node, why in sorted(record["other"].items())
            if PACKAGE_MISSING.search(why) and node not in OUTSIDE_EXTRAS]


def main() -> int:
    first = read_record()
    if [arg for arg in first["args"] if not arg.startswith("-")]:
        print(f"extra_tests: the last pytest run was not the whole suite (pytest {' '.join(first['args'])})",
              file=sys.stderr)
        return 1
    problems = unclaimed(first)
    for line in problems:
        print(f"extra_tests: skipped for a missing package but names no extra: {line}", file=sys.stderr)
    if problems:
        print("extra_tests: declare the extra (@pytest.mark.extra, docs/development.md)", file=sys.stderr)
        return 1
    nodes = sorted(first["extra"])
    per_extra = ", ".join(f"{extra} {n}" for extra, n in sorted(Counter(first["extra"].values()).items()))
    print(f"extra_tests: {len(nodes)} tests and modules the README's test command skipped ({per_extra})",
          flush=True)
    if not nodes:
        return 0
    code = subprocess.run([sys.executable, "-m", "pytest", "-q", *nodes], cwd=ROOT, check=False).returncode
    still = read_record()["extra"]
    for node, extra in sorted(still.items()):
        print(f"extra_tests: {node} still skips for the {extra} extra", file=sys.stderr)
    return code or (1 if still else 0)


if __name__ == "__main__":
    sys.exit(main())

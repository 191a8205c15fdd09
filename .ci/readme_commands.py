"""Checks that ``.ci/run`` runs the README's Quick start commands exactly as the README writes them.

Why: CI must run what a newcomer runs first. ``.ci/run`` writes the two commands out, as lines of its
own (so a reader of it, or a grep, sees them), and runs this first: when the README's first two
``bash`` blocks of its Quick start (the install-and-demo command and the test command;
``tests/test_readme.py`` checks which is which) are not both lines of ``.ci/run``, in that order and
before anything else is installed, CI stops here, so the two can never drift apart. Only the standard
library: it runs before the install, with the system's python3.

Usage: ``python3 .ci/readme_commands.py --check`` (exit 1 naming the command that drifted), ``--print``
(show the commands), or no option: run them, as written, with bash, from the repository root.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def quick_start(text: str) -> list[str]:
    """The first two ``bash`` blocks of the README's ``## Quick start`` section, as written."""
    section = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```bash\n(.*?)^```", section, re.MULTILINE | re.DOTALL)[:2]


def drifted(commands: list[str], ci: str) -> list[str]:
    """The README commands that are not lines of ``ci`` in the README's order (empty: none drifted)."""
    lines = [line.strip() for line in ci.splitlines()]
    found, at = [], 0
    for command in commands:
        try:
            at = lines.index(command.strip(), at) + 1
        except ValueError:
            found.append(command.strip())
    return found


def main(argv: list[str]) -> int:
    commands = quick_start((ROOT / "README.md").read_text(encoding="utf-8"))
    if "--check" in argv:
        missing = drifted(commands, (ROOT / ".ci" / "run").read_text(encoding="utf-8"))
        for command in missing:
            print(f"readme_commands: .ci/run does not run the README's command as written: {command}",
                  file=sys.stderr)
        return 1 if missing or len(commands) != 2 else 0
    for command in commands:
        print(f"+ {command.strip()}", flush=True)
        if "--print" in argv:
            continue
        started = time.monotonic()
        code = subprocess.run(["bash", "-e", "-c", command], cwd=ROOT, check=False).returncode
        print(f"readme_commands: `{command.strip()}` exited {code} after {time.monotonic() - started:.0f} s",
              flush=True)
        if code:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

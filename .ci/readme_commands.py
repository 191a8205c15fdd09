"""Runs the README's Quick start commands exactly as the README writes them.

Why: CI must run what a newcomer runs first, and a copy of the commands in ``.ci/run`` would drift from
the README. The Quick start's first two ``bash`` blocks are the install-and-demo command and the test
command (``tests/test_readme.py`` checks which is which); each runs as written, with bash, from the
repository root, and the first that fails ends this with its exit status. Only the standard library:
it runs before the install, with the system's python3.

Usage: ``python3 .ci/readme_commands.py`` (``--print``: show the commands, run nothing).
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


def main(argv: list[str]) -> int:
    commands = quick_start((ROOT / "README.md").read_text(encoding="utf-8"))
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

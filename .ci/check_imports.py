"""Every agentworld module imports in a fresh venv with only the base dependencies (and each extra's
modules with only that extra).

Why: a module-level import of a package no dependency list declares (numpy in ``eval compare``) passes
every test in the full dev venv and crashes on a plain ``pip install agentworld``. This builds a temp
venv, installs the checkout without extras (pip's cache makes it quick: about 25 s), imports every
module, then adds each extra that has modules of its own and imports those. Needs the package index
(so it is a CI step, not part of the offline test suite); tests/test_dependencies.py checks the same
statically. Usage: ``python .ci/check_imports.py`` (exit 1 and one line per module that fails).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXTRA_MODULES = {"agentworld.serve.adapters.gym": "gym"}
"""Modules that need an extra to import: the base venv must refuse them, that extra must admit them."""
OUTSIDE = {"agentworld.train.verl_loop": "verl's agent-loop plugin: verl is installed beside the venv "
                                         "(tests/verl_deps/install.sh), never by an extra"}
"""Modules no extra can make importable, and why."""
PROBE = """
import importlib, json, pkgutil, sys
import agentworld
failed = {}
for info in pkgutil.walk_packages(agentworld.__path__, "agentworld."):
    if info.name == "agentworld.__main__":
        continue  # runs the CLI
    try:
        importlib.import_module(info.name)
    except Exception as exc:
        failed[info.name] = f"{type(exc).__name__}: {exc}"
print(json.dumps(failed))
"""


def _failures(python: Path) -> dict[str, str]:
    out = subprocess.run([str(python), "-c", PROBE], capture_output=True, text=True, check=True, cwd="/")
    import json

    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _pip(python: Path, *args: str) -> None:
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *args],
                   check=True)


def main() -> int:
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="agentworld-imports-") as tmp:
        venv.create(tmp, with_pip=True)
        python = Path(tmp) / "bin" / "python"
        _pip(python, str(ROOT))  # a real (non-editable) install: what `pip install agentworld` gives
        failed = _failures(python)
        for name, error in sorted(failed.items()):
            if name not in EXTRA_MODULES and name not in OUTSIDE:
                problems.append(f"{name} does not import with the base dependencies: {error}")
        for name, extra in sorted(EXTRA_MODULES.items()):
            if name not in failed:
                problems.append(f"{name} imports without the {extra} extra: drop it from EXTRA_MODULES")
        for extra in sorted(set(EXTRA_MODULES.values())):
            _pip(python, f"{ROOT}[{extra}]")
            failed = _failures(python)
            problems += [f"{name} does not import with the {extra} extra: {failed[name]}"
                         for name, wanted in EXTRA_MODULES.items() if wanted == extra and name in failed]
    for line in problems:
        print(line, file=sys.stderr)
    print(f"check_imports: {'FAILED' if problems else 'ok'} ({len(problems)} problem(s))")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

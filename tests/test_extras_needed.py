"""The README's test command passes on the README's install: a test needing another extra skips naming it.

Why: on a fresh machine ``bash install.sh`` (the dev and web extras) then ``.venv/bin/pytest -q`` stopped
at collection (a test module imported ``openai``, which only an extra brought) and errored in 18 tests
that built a tiny torch model, while CI, installing every extra first, passed. These check the scheme
of ``tests/extras_needed.py``: what it knows of each extra, the hooks in a real pytest run, the static
rule that keeps a test module's top-level imports inside the README's install, and the CI step that
runs the skipped tests again (``.ci/extra_tests.py``).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import extras_needed
from extras_needed import ROOT, attribute, declared, distribution_of, extra_of

TESTS = ROOT / "tests"
README_INSTALL = ("dev", "web")
"""The extras ``bash install.sh`` brings without flags."""


def _ci_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / ".ci" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_extra_has_an_install_line_and_a_place_in_the_order() -> None:
    extras = set(declared()[1])
    assert set(extras_needed.INSTALL) == extras and set(extras_needed.PREFERRED) == extras
    script = (ROOT / "install.sh").read_text(encoding="utf-8")
    for extra, how in extras_needed.INSTALL.items():
        flags = re.findall(r"--[a-z]+", how) if how.startswith("bash install.sh") else []
        assert all(f"    {flag})" in script for flag in flags), f"{extra}: install.sh has no {flags}"
    assert extras_needed.PREFERRED[:2] == README_INSTALL


def test_a_skip_is_attributed_to_the_extra_that_brings_the_missing_package() -> None:
    assert extra_of("trl") == "train" and extra_of("llama_cpp.server") == "train"
    assert extra_of("transformers") == "dev"  # in dev and train: the README's install has it
    assert extra_of("ray") == "ray" and extra_of("material") == "docs"
    assert extra_of("yaml") is None and extra_of("openenv") is None  # a base dependency; no extra
    extra, shown = attribute("could not import 'llama_cpp.server': No module named 'llama_cpp'")
    assert extra == "train" and shown.startswith("needs the train extra: bash install.sh --train")
    assert "no module named 'llama_cpp'" in shown
    assert attribute("needs the ray extra: bash install.sh --ray (missing: ray)")[0] == "ray"
    assert attribute("could not import 'openenv': No module named 'openenv'") == (
        None, "could not import 'openenv': No module named 'openenv'")
    assert attribute("shared/data is not beside the repo") == (None, "shared/data is not beside the repo")
    line = '    vf = pytest.importorskip("verifiers", reason='  # the line that skipped, with its own reason
    extra, shown = attribute("verifiers is not installed", line)
    assert extra == "verifiers" and shown.startswith("needs the verifiers extra: bash install.sh --train")
    assert shown.endswith(": verifiers is not installed")


def _local_modules() -> set[str]:
    """What a test may import from tests/ itself (helpers, packages, other test modules)."""
    return {p.stem for p in TESTS.rglob("*.py")} | {p.name for p in TESTS.rglob("*") if p.is_dir()}


def test_no_test_module_imports_at_its_top_a_package_the_readme_install_lacks() -> None:
    """A module-level import outside the README's install is a collection error there (the ``openai`` of
    ``test_mock_stream.py``): it must follow a module-level ``pytest.importorskip`` of its package."""
    base, extras = declared()
    installed = base.union(*(extras[name] for name in README_INSTALL))
    local, wrong = _local_modules(), []
    for path in sorted(TESTS.rglob("*.py")):
        if "mcp_clients" in path.parts:  # verl's own files, run by verl's child process only
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        guarded: set[str] = set()
        for node in tree.body:
            call = node.value if isinstance(node, ast.Expr | ast.Assign) else None
            if isinstance(call, ast.Call) and ast.unparse(call.func) == "pytest.importorskip" and call.args:
                guarded.add(ast.literal_eval(call.args[0]).split(".")[0])
            imported = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                        [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                        else [])
            for name in imported:
                top = name.split(".")[0]
                if (top in sys.stdlib_module_names or top in local or top in guarded
                        or top == "agentworld" or distribution_of(top) in installed):
                    continue
                wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {top} ({extra_of(top)} extra)")
    assert not wrong, "\n".join(wrong)


CONFTEST = """
import extras_needed
from extras_needed import (pytest_collection_modifyitems, pytest_configure, pytest_make_collect_report,
                           pytest_runtest_makereport, pytest_sessionfinish, pytest_terminal_summary)

extras_needed.missing = lambda extra: ("torch",) if extra == "train" else ()
extras_needed.IMPORT_NAMES["agentworld_absent"] = "torch"  # a module no machine has, brought by "train"
"""
MARKED = """
import pytest

@pytest.mark.extra("train")
def test_marked():
    raise AssertionError("ran without its extra")

@pytest.mark.extra("ray")
def test_marked_with_an_extra_that_is_there():
    pass

def test_plain():
    pass

def test_importorskip_inside():
    pytest.importorskip("agentworld_absent")

def test_importorskip_with_a_reason_of_its_own():
    pytest.importorskip("agentworld_absent", reason="wants agentworld_absent")

def test_skipped_for_something_else():
    pytest.skip("no tau-bench logs here")
"""
MODULE_LEVEL = """
import pytest

pytest.importorskip("agentworld_absent")

def test_never():
    raise AssertionError("ran without its extra")
"""


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (folder / "pytest.ini").write_text("[pytest]\nmarkers =\n    extra: needs an extra\n")
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-c", str(folder / "pytest.ini"),
                           "--rootdir", str(folder), *args], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def test_a_real_run_skips_names_and_records_each_test_needing_a_missing_extra(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_marked.py").write_text(MARKED)
    (tmp_path / "test_module_level.py").write_text(MODULE_LEVEL)
    done = _pytest(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed, 5 skipped" in done.stdout
    assert "3 tests and 1 module skipped for the train extra (bash install.sh --train)" in done.stdout
    assert "test_marked.py:4: needs the train extra: bash install.sh --train (missing: torch)" in done.stdout
    assert "train extra: bash install.sh --train (no module named 'agentworld_absent')" in done.stdout
    record = json.loads((tmp_path / ".pytest_cache/v/agentworld/skips").read_text())
    assert "(missing: torch): wants agentworld_absent" in done.stdout
    assert record["extra"] == {"test_marked.py::test_marked": "train",
                               "test_marked.py::test_importorskip_inside": "train",
                               "test_marked.py::test_importorskip_with_a_reason_of_its_own": "train",
                               "test_module_level.py": "train"}
    assert record["other"] == {"test_marked.py::test_skipped_for_something_else": "no tau-bench logs here"}
    assert record["args"] == ["-q", "-rs", "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path)]


def test_a_marker_naming_no_extra_stops_the_run(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_typo.py").write_text('import pytest\n\n@pytest.mark.extra("trian")\ndef test_t():\n'
                                           '    pass\n')
    done = _pytest(tmp_path)
    assert done.returncode == 4  # a usage error
    assert "test_typo.py::test_t: pytest.mark.extra('trian') is not an extra of pyproject.toml" in done.stderr


def test_ci_refuses_a_skip_for_a_package_that_no_extra_brings() -> None:
    ci = _ci_module("extra_tests")
    record = {"args": ["-q"], "extra": {"tests/a.py::t": "train"},
              "other": {"tests/b.py::t": "could not import 'openenv': No module named 'openenv'",
                        "tests/c.py::t": "frobnitz is not installed",
                        "tests/d.py::t": "shared/data (tau-bench logs) is not beside the repo",
                        **dict.fromkeys(ci.OUTSIDE_EXTRAS, "openenv is not installed (needs its own venv)")}}
    assert ci.unclaimed(record) == ["tests/b.py::t: could not import 'openenv': No module named 'openenv'",
                                    "tests/c.py::t: frobnitz is not installed"]
    for node in ci.OUTSIDE_EXTRAS:  # each exemption names a test that exists
        path, name = node.split("::")
        assert f"def {name}(" in (ROOT / path).read_text(encoding="utf-8")

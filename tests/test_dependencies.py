"""Every third-party package agentworld imports is declared where a user installing it will get it.

Why: ``eval compare`` imported numpy, which no dependency list named, so it crashed on a plain
``pip install agentworld``; starlette, anyio, pydantic_core and mcp_types were imported directly while
arriving only as other packages' dependencies. Statically, for every module of ``src/agentworld``:
an import at module level must be a base dependency (or the extra the module belongs to), an import
inside a function (the project's way to keep an extra optional) must be declared in the base or some
extra. ``.ci/check_imports.py`` checks the same for real in a fresh venv with only the base
dependencies. Also: typer's private click lives behind one shim whose minimum typer is pyproject's.

The verdict must not depend on what is installed: an import name is mapped to its distribution by a
table (``extras_needed.IMPORT_NAMES``), not by asking the installed packages, which on the README's
install (no train extra) turned ``llama_cpp`` into ``llama-cpp`` and failed. Where a package is
installed, its metadata checks the table instead.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import typer

from agentworld.cli_click import MIN_TYPER
from extras_needed import IMPORT_NAMES, declared, distribution_of, norm

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "agentworld"
MODULE_EXTRA = {"serve/adapters/gym.py": "gym"}
"""Modules of an extra: they may import it at module level (only that extra's users import them)."""
NOT_FROM_PYPI = {
    "verl": "installed beside the venv by tests/verl_deps/install.sh (it pins transformers<5.11)",
    "verifiers": "install.sh --train installs verifiers==0.3.1 with --no-deps (it pins mcp<2)",
    "vllm": "the vllm backend's own install (GPU builds); models/vllm_backend.py says so when it is missing",
}
"""Imports no extra declares, and why: each is imported only inside the module that needs it."""


def _imports(tree: ast.Module) -> list[tuple[str, int, bool]]:
    """``(top-level name, line, at module level)`` of every absolute import (``TYPE_CHECKING`` blocks
    are not imports at run time)."""
    found: list[tuple[str, int, bool]] = []

    def visit(nodes: list[ast.AST], top: bool) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
                continue
            if isinstance(node, ast.Import):
                found.extend((a.name.split(".")[0], node.lineno, top) for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.append((node.module.split(".")[0], node.lineno, top))
            inner = top and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)  # a class body runs
            for field in ("body", "orelse", "handlers", "finalbody"):
                children = getattr(node, field, None)
                if isinstance(children, list):
                    visit(children, inner)

    visit(list(tree.body), True)
    return found


def _third_party_imports() -> list[tuple[str, str, int, bool]]:
    """``(path under src/agentworld, top-level name, line, at module level)`` of each import from PyPI."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for top, line, module_level in _imports(ast.parse(path.read_text())):
            if top in sys.stdlib_module_names or top in ("agentworld", "__future__") or top in NOT_FROM_PYPI:
                continue
            found.append((rel, top, line, module_level))
    return found


def test_every_third_party_import_is_declared_where_its_module_needs_it() -> None:
    base, extras = declared()
    every_extra = set().union(*extras.values())
    wrong = []
    for rel, top, line, module_level in _third_party_imports():
        dist = distribution_of(top)
        if module_level:
            ok = dist in base or dist in extras.get(MODULE_EXTRA.get(rel, ""), set())
        else:
            ok = dist in base or dist in every_extra
        if not ok:
            where = "base dependencies" if module_level else "base dependencies or an extra"
            wrong.append(f"src/agentworld/{rel}:{line} imports {top} ({dist}): not in the {where}")
    assert not wrong, "\n".join(wrong)


def test_import_names_map_to_the_distributions_installed_under_them() -> None:
    """Where a package is installed (every extra is, in CI's second run) its metadata must agree with the
    static mapping, so an import whose distribution is named otherwise cannot pass unnoticed."""
    installed = importlib.metadata.packages_distributions()
    wrong = []
    for top in sorted({top for _, top, _, _ in _third_party_imports()}):
        names = {norm(name) for name in installed.get(top, [])}
        if names and distribution_of(top) not in names:
            wrong.append(f"import {top} comes from {sorted(names)}, mapped to {distribution_of(top)}: "
                         "add it to extras_needed.IMPORT_NAMES")
    assert not wrong, "\n".join(wrong)
    assert distribution_of("llama_cpp.server") == "llama-cpp-python"  # installed or not
    assert set(IMPORT_NAMES.values()) <= set().union(declared()[0], *declared()[1].values())


def test_the_checker_sees_module_level_and_lazy_imports() -> None:
    tree = ast.parse("import numpy\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n"
                     "try:\n    import lxml.etree\nexcept ImportError:\n    pass\n"
                     "def f():\n    import bm25s\nclass C:\n    import yaml\n"
                     "    def g(self):\n        from ray import data\n")
    assert _imports(tree) == [("numpy", 1, True), ("typing", 2, True), ("lxml", 6, True),
                              ("bm25s", 10, False), ("yaml", 12, True), ("ray", 14, False)]


def test_typer_private_click_is_imported_by_the_shim_only_and_its_minimum_is_declared() -> None:
    offenders = [f"{p.relative_to(ROOT)}:{n}" for folder in ("src", "tests", "benchmarks", "examples")
                 for p in sorted((ROOT / folder).rglob("*.py")) if p.name != "cli_click.py"
                 for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
                 if re.search(r"\b(from|import) typer\.(_click|core|exceptions)\b", line)]
    assert not offenders, offenders
    base = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (spec,) = [s for s in base if re.match(r"typer\b", s)]
    assert spec.split(";")[0].strip() == f"typer>={MIN_TYPER}"
    installed = tuple(int(x) for x in typer.__version__.split(".")[:2])
    assert installed >= tuple(int(x) for x in MIN_TYPER.split("."))

"""Code outside ``domains/`` must not branch on a domain's name (issue 10: a domain is one package).

The goal is none. Until the domain packages land, the branches that exist are listed here and the
test fails on any new one (or on more in a listed file): shrink the list as they move, never grow it.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "agentworld"
DOMAINS = "terminal|mcp|search|swe|web|android|os"
BRANCH = re.compile(rf"""==\s*["']({DOMAINS})["']|["']({DOMAINS})["']\s*=="""
                    rf"""|\bin\s*\((?:["']({DOMAINS})["'],?\s*)+\)""")

KNOWN: dict[str, int] = {}
"""Branches on a domain name left outside ``domains/`` (to be moved into the domain packages)."""


def branches() -> Counter[str]:
    found: Counter[str] = Counter()
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("domains/"):
            continue
        found[rel] += sum(1 for line in path.read_text(encoding="utf-8").splitlines() if BRANCH.search(line))
    return +found


KNOWN_NAMES = {"serve/serve_cli.py": 1, "train/verl_config.py": 1}
"""Domain names as string constants outside ``domains/`` (defaults, table keys, registrations), per file.

Stricter than :data:`KNOWN`: any ``"terminal"`` in code counts, not only comparisons; ``schema.py`` is no
exception (the data format names no domain). The benchmark's seven and a default name their domains once,
in ``agentworld.domains`` (``BENCHMARK_DOMAINS``, ``OFFICIAL_DEFAULT_DOMAIN``, ``DEFAULT_DOMAIN``,
``TOOLS_DOMAIN``); what differs between domains is a field of their plugins
(``error_patterns``, ``gui``). What is left, and why:

- ``serve/serve_cli.py``: ``agentworld serve mcp`` is named after the protocol it serves, not the domain
  (the domain it simulates is ``TOOLS_DOMAIN``).
- ``train/verl_config.py``: ``"mcp"`` is verl's tool type and config section and the ``serve mcp`` command.
"""


def name_constants() -> Counter[str]:
    names = set(DOMAINS.split("|"))
    found: Counter[str] = Counter()
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("domains/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found[rel] += sum(isinstance(n, ast.Constant) and n.value in names for n in ast.walk(tree))
    return +found


def test_no_new_domain_names_in_code_outside_domains() -> None:
    grown = {f: n for f, n in name_constants().items() if n > KNOWN_NAMES.get(f, 0)}
    assert grown == {}, f"domain names in code outside domains/ (ask the domain's plugin instead): {grown}"


def test_no_new_branches_on_domain_names_outside_domains() -> None:
    grown = {f: n for f, n in branches().items() if n > KNOWN.get(f, 0)}
    assert grown == {}, f"new branches on a domain name outside domains/ (move them into the domain): {grown}"


def test_the_pattern_sees_a_branch() -> None:
    assert BRANCH.search('if domain == "terminal":') and BRANCH.search("if 'mcp' == d")
    assert BRANCH.search('if d not in ("mcp", "terminal") and x')
    assert not BRANCH.search('DOMAINS["terminal"].system_prompt')


# -- imports run one way ---------------------------------------------------------------------------

LAYERS: dict[str, int] = {
    **dict.fromkeys(("schema", "errors", "io", "inputs", "outputs", "marks", "lazy", "redact", "cli_support",
                     "cli_click", "configfile", "report_style"), 0),
    "http_limits": 0,
    "envs": 1,
    "domains": 2,
    "corpus": 3,
    **dict.fromkeys(("data", "models"), 4),
    "endpoints": 5,
    "sim": 6,
    **dict.fromkeys(("synth", "plan"), 7),
    "eval": 8,
    "serve": 9,
    "optimize": 10,
    "train": 11,
    **dict.fromkeys(("doctor", "demo"), 12),
    **dict.fromkeys(("demo_cli", "record_cli", "cli", "cli_docs", "__main__", "__init__"), 13),
}
"""The floor of each top-level module or package of ``agentworld``; a unit imports only its own floor and
those below, and units on one floor never import each other in a cycle.

From the bottom: the foundation (the data format, errors, file and CLI helpers) ← ``envs`` (real
environments) ← ``domains`` (one package per domain) ← ``corpus`` (recordings the domains index) ← ``data``
(trajectories → training data) and ``models`` (world-model backends) ← ``endpoints`` ← ``sim`` (the
simulator, and what every user of it shares: the agent's prompt and parser, tool files, curricula) ←
``synth`` and ``plan`` ← ``eval`` ← ``serve`` (the mock server serves eval's corruption model) ←
``optimize`` (prompt search scored by eval) ← ``train`` (which reads optimized prompts, serves TRL
environments and trains in synthesized worlds) ← ``doctor``/``demo`` ← the commands."""


def _unit(module: str) -> str | None:
    """The top-level unit of ``agentworld.x.y`` (``x``), or None outside agentworld."""
    parts = module.split(".")
    if parts[0] != "agentworld":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def _is_unit(name: str) -> bool:
    return (SRC / name).is_dir() or (SRC / f"{name}.py").is_file()


@functools.cache
def imports() -> list[tuple[str, str, str]]:
    """(file, its unit, imported unit) for every import statement of agentworld, lazy ones included."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        here = rel.parts[0].removesuffix(".py")
        package = ["agentworld", *rel.parent.parts]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
                modules = [".".join(x for x in (base, node.module or "") if x)]
                if modules == ["agentworld"]:  # ``from agentworld import schema``: the unit is the name
                    modules = [f"agentworld.{a.name}" if _is_unit(a.name) else "agentworld"
                               for a in node.names]
            else:
                continue
            for module in modules:
                unit = _unit(module)
                if unit is not None and unit != here:
                    found.append((rel.as_posix(), here, unit))
    return found


def upward() -> Counter[str]:
    return Counter(f for f, here, unit in imports() if LAYERS[unit] > LAYERS[here])


def unit_cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The import cycles between units (strongly connected components of more than one unit)."""
    graph: dict[str, set[str]] = {}
    for here, unit in edges:
        graph.setdefault(here, set()).add(unit)
        graph.setdefault(unit, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = [stack.pop()]
            while component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_module_has_a_layer() -> None:
    units = {p.relative_to(SRC).parts[0].removesuffix(".py") for p in SRC.rglob("*.py")}
    assert units - set(LAYERS) == set(), "give each new top-level module a layer in LAYERS"


def test_imports_run_one_way() -> None:
    found = upward()
    where = sorted({f"{file}: {here} -> {unit}" for file, here, unit in imports() if file in found
                    and LAYERS[unit] > LAYERS[here]})
    assert found == Counter(), f"imports of a higher floor (see LAYERS): {where}"


def test_no_cycle_between_units() -> None:
    """No two top-level units import each other, directly or round a loop, lazy imports included."""
    assert unit_cycles((here, unit) for _, here, unit in imports()) == []


def test_the_checks_see_an_upward_import_and_a_cycle() -> None:
    assert unit_cycles([("eval", "train"), ("train", "serve"), ("serve", "eval"), ("sim", "models")]) == [
        ["eval", "serve", "train"]]
    assert unit_cycles([("train", "eval"), ("serve", "eval")]) == []
    assert LAYERS["train"] > LAYERS["eval"] > LAYERS["sim"] > LAYERS["models"] > LAYERS["domains"]


def test_envs_import_nothing_from_sim() -> None:
    assert [(f, u) for f, here, u in imports() if here == "envs" and u == "sim"] == []


def test_the_built_in_domains_are_the_benchmark_domains_each_one_package() -> None:
    """``BENCHMARK_DOMAINS`` (AgentWorldBench's seven, a fact of ``domains/``) are the built-in packages."""
    from agentworld.domains import BENCHMARK_DOMAINS
    from agentworld.domains.base import plugins
    from agentworld.domains.registry import domain_names

    packages = sorted(p.parent.name for p in (SRC / "domains").glob("*/__init__.py"))
    built_in = {n: p for n, p in plugins().items() if p.package.startswith("agentworld.domains.")}
    assert sorted(built_in) == sorted(BENCHMARK_DOMAINS) == packages
    assert all(p.package == f"agentworld.domains.{n}" for n, p in built_in.items())
    assert domain_names()[: len(BENCHMARK_DOMAINS)] == BENCHMARK_DOMAINS
    for name in BENCHMARK_DOMAINS:
        for prompt in ("system_prompt", "judge_system_prompt"):
            assert (SRC / "domains" / name / "prompts" / f"{prompt}.txt").is_file(), (name, prompt)


def test_the_data_format_names_no_domain_and_imports_no_registry() -> None:
    """``schema`` (layer 0) knows no domain: no list of names, no default; importing it loads no domain."""
    import agentworld.schema as schema

    assert not {"DOMAIN_NAMES", "OFFICIAL_DEFAULT_DOMAIN"} & set(vars(schema))
    assert not [u for f, here, u in imports() if f == "schema.py" and u == "domains"]
    code = "import sys, agentworld.schema; print(sorted(m for m in sys.modules if 'agentworld.domains' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(SRC.parent)}).stdout
    assert out.strip() == "[]"


SCHEMA_LOADERS = {"parse_row", "read_bench_jsonl", "load_samples"}


def unchecked_calls(source: str) -> list[int]:
    """Lines of ``source`` calling a schema loader without saying which domains it accepts."""
    tree = ast.parse(source)
    names = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
             and n.module == "agentworld.schema" for a in n.names if a.name in SCHEMA_LOADERS}
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        loader = (isinstance(func, ast.Name) and func.id in names) or (
            isinstance(func, ast.Attribute) and func.attr in SCHEMA_LOADERS
            and isinstance(func.value, ast.Name) and func.value.id == "schema")
        if loader and not any(k.arg == "known_domains" for k in node.keywords):
            lines.append(node.lineno)
    return lines


def test_every_loader_asks_the_registry_which_domains_there_are() -> None:
    """A loader passes ``known_domains`` (the registry's ``domain_names()``, or None where any goes): the
    schema's default checks nothing, so a forgotten argument would let a typo'd ``task`` through."""
    found = [f"{p.relative_to(SRC).as_posix()}:{n}" for p in sorted(SRC.rglob("*.py"))
             if p != SRC / "schema.py" for n in unchecked_calls(p.read_text(encoding="utf-8"))]
    assert found == []
    seen = unchecked_calls("from agentworld.schema import load_samples as ls, parse_row\n"
                           "from agentworld import schema\nls(p)\nparse_row(r, known_domains=None)\n"
                           "schema.read_bench_jsonl(p)\nfrom agentworld.train.common import load_samples\n"
                           "load_samples(c)\n")
    assert seen == [3, 5]


def test_the_plugins_are_cheap_to_import() -> None:
    """Listing the domains (what ``agentworld record --help`` does) imports no heavy part of any of them."""
    code = ("import sys; from agentworld.domains.base import plugins; found = plugins(); "
            "print(len(found)); print(*sorted(m for m in sys.modules if m.split('.')[0] in "
            "('pydantic', 'typer', 'rich', 'httpx', 'torch') or m.startswith(('agentworld.schema', "
            "'agentworld.envs', 'agentworld.models', 'agentworld.sim', 'agentworld.domains.registry'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(SRC.parent)}).stdout.split("\n")
    assert int(out[0]) >= 7 and out[1] == "", f"importing the plugins pulled in: {out[1]}"

"""No JSON-lines reader in ``src`` splits with ``str.splitlines`` (issue 31; see :mod:`agentworld.inputs`).

``str.splitlines`` also splits on U+2028, U+2029, U+0085 (and a few control characters), which JSON
writers leave raw inside strings, so a reader that splits a JSON-lines text with it and parses each
piece judges a correct file broken (the memory task check failed a correct episode so). The one
splitter is :func:`agentworld.inputs.jsonl_rows` (or :func:`agentworld.inputs.lines` for a file).
This test reads the source: a function that parses (``json.loads``, ``orjson.loads``, ``loads``,
``parse_json``) something it got by iterating over ``splitlines()`` is named.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "agentworld"
PARSERS = {"loads", "parse_json"}


def _splits(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "splitlines"
               for n in ast.walk(node))


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _is_parser(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id in PARSERS) or \
        (isinstance(node, ast.Attribute) and node.attr in PARSERS)


def offenders(tree: ast.AST) -> Iterator[int]:
    """Lines where a function parses JSON out of what it iterates from ``splitlines()``."""
    for scope in ast.walk(tree):
        if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module):
            continue
        assigned = [n for n in ast.walk(scope) if isinstance(n, ast.Assign | ast.AnnAssign)
                    and n.value is not None and _splits(n.value)]
        split = {t.id for n in assigned for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                 if isinstance(t, ast.Name)}
        pieces: set[str] = set()
        for n in ast.walk(scope):
            if isinstance(n, ast.For | ast.AsyncFor | ast.comprehension) and \
                    (_splits(n.iter) or _names(n.iter) & split):
                pieces |= _names(n.target)
        for n in ast.walk(scope):
            if not isinstance(n, ast.Call):
                continue
            args = [*n.args, *(k.value for k in n.keywords)]
            if _is_parser(n.func) and any(_names(a) & pieces for a in args):
                yield n.lineno
            elif any(_is_parser(a) for a in args) and any(_splits(a) or _names(a) & split for a in args):
                yield n.lineno  # map(json.loads, text.splitlines())


def test_the_check_finds_a_splitlines_reader() -> None:
    bad = [
        "def f(text):\n    for line in text.splitlines():\n        json.loads(line)\n",
        "def f(path):\n    lines = path.read_text().splitlines()\n"
        "    return [orjson.loads(x) for x in filter(None, lines)]\n",
        "def f(text):\n    return list(map(json.loads, text.splitlines()))\n",
    ]
    good = "def f(text):\n    head = text.splitlines()[0]\n    return json.loads(text), head\n"
    assert all(list(offenders(ast.parse(code))) for code in bad)
    assert not list(offenders(ast.parse(good)))


def test_no_json_lines_reader_in_src_splits_with_splitlines() -> None:
    found = sorted({f"{path.relative_to(SRC.parent)}:{line}" for path in SRC.rglob("*.py")
                    for line in offenders(ast.parse(path.read_text(encoding="utf-8")))})
    assert not found, f"JSON-lines readers split with str.splitlines (use inputs.jsonl_rows): {found}"

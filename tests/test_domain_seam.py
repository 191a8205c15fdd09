"""Code outside ``domains/`` must not branch on a domain's name (issue 10: a domain is one package).

The goal is none. Until the domain packages land, the branches that exist are listed here and the
test fails on any new one (or on more in a listed file): shrink the list as they move, never grow it.
"""

from __future__ import annotations

import re
from collections import Counter
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


def test_no_new_branches_on_domain_names_outside_domains() -> None:
    grown = {f: n for f, n in branches().items() if n > KNOWN.get(f, 0)}
    assert grown == {}, f"new branches on a domain name outside domains/ (move them into the domain): {grown}"


def test_the_pattern_sees_a_branch() -> None:
    assert BRANCH.search('if domain == "terminal":') and BRANCH.search("if 'mcp' == d")
    assert BRANCH.search('if d not in ("mcp", "terminal") and x')
    assert not BRANCH.search('DOMAINS["terminal"].system_prompt')

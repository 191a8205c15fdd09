"""How many observations of each shipped corpus the domain's error patterns mark as failures.

Why: the patterns (``DomainPlugin.error_patterns``) drive retry detection and loss masking, so a new
pattern should mark the corpus's real errors and nothing else. Run it on two checkouts (``PYTHONPATH``)
and compare the counts; ``--show`` lists every marked observation (its trajectory, turn and first
line), ``--json`` writes the marked keys for a diff. Each trajectory's turns are counted once (a
corpus row holds the whole trajectory).

    PYTHONPATH=src python benchmarks/bench_error_marks.py [--show] [--json marked.json]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from agentworld.domains.base import plugins
from agentworld.domains.failures import error_patterns, is_error, observation_body


def observations(corpus: Path) -> dict[str, str]:
    """Each distinct turn of the corpus, keyed ``trajectory#turn``, its observation without the marker."""
    seen: dict[str, str] = {}
    with corpus.open(encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            base = re.sub(r"-t\d+$", "", row["id"])
            for i, text in enumerate(row["response"]):
                seen[f"{base}#{i}"] = observation_body(text)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="print each marked observation's first line")
    parser.add_argument("--json", type=Path, help="write {domain: [marked keys]} here")
    args = parser.parse_args()
    marked: dict[str, list[str]] = {}
    for name, plugin in sorted(plugins().items()):
        corpus = plugin.data_file(plugin.corpus)
        if corpus is None:
            continue
        seen = observations(corpus)
        patterns = error_patterns(name)
        marked[name] = [k for k, text in seen.items() if is_error(text, name, patterns)]
        print(f"{name:10s} {len(marked[name]):4d} of {len(seen):4d} observations marked")
        if args.show:
            for key in marked[name]:
                print(f"    {key}: {seen[key].splitlines()[0][:110]!r}")
    if args.json:
        args.json.write_text(json.dumps(marked, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()

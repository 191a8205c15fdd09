"""Corpora of real recordings shipped with agentworld.

``terminal.jsonl`` holds AgentWorldBench rows recorded from a real, sandboxed bash with
``agentworld.domains.terminal.record`` from the built-in scenarios
(``agentworld/domains/terminal/scenarios/*.json``). Re-create it
with one command (needs bubblewrap and tmux)::

    agentworld record terminal --out src/agentworld/corpus/terminal.jsonl --overwrite --seed 0

File dates, sizes, PIDs and the ``meta`` timings differ between recordings; everything else is
reproducible for a given seed.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from agentworld.errors import DataError


def corpus_path(name: str) -> Path:
    """Path of a shipped corpus, e.g. ``corpus_path("terminal")`` (``.jsonl`` may be omitted)."""
    filename = name if name.endswith(".jsonl") else f"{name}.jsonl"
    path = Path(str(resources.files("agentworld.corpus") / filename))
    if not path.is_file():
        known = sorted(p.stem for p in path.parent.glob("*.jsonl"))
        raise DataError(f"no shipped corpus named {name!r}; known: {', '.join(known) or 'none'}",
                        path=str(path))
    return path


__all__ = ["corpus_path"]

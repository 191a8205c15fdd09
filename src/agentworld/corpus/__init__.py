"""Corpora of real recordings shipped with agentworld: one per domain package that has a recorder.

A domain's plugin names its corpus (``corpus="corpus.jsonl"``, package data beside its ``__init__``);
the terminal's holds AgentWorldBench rows recorded from a real, sandboxed bash from the built-in
scenarios (``agentworld/domains/terminal/scenarios/*.json``). Re-create it with one command (needs
bubblewrap and tmux)::

    agentworld record terminal --out src/agentworld/domains/terminal/corpus.jsonl --overwrite --seed 0

File dates, sizes, PIDs and the ``meta`` timings differ between recordings; everything else is
reproducible for a given seed.
"""

from __future__ import annotations

from pathlib import Path

from agentworld.domains.base import plugins
from agentworld.errors import DataError


def shipped_corpora() -> dict[str, Path]:
    """Domain name → its shipped corpus, for every domain that ships one."""
    return {name: path for name, p in plugins().items() if (path := p.data_file(p.corpus)) is not None}


def corpus_path(name: str) -> Path:
    """Path of a domain's shipped corpus, e.g. ``corpus_path("terminal")`` (``.jsonl`` may be omitted)."""
    corpora = shipped_corpora()
    path = corpora.get(name.removesuffix(".jsonl"))
    if path is None:
        raise DataError(f"no shipped corpus named {name!r}; known: {', '.join(corpora) or 'none'}")
    return path


__all__ = ["corpus_path", "shipped_corpora"]

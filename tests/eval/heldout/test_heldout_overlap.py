"""Held-out scenarios do not leak into the shipped corpora: not by scenario, and (almost) not by content.

The held-out side is a fresh recording of each domain's held-out scenarios, made in this test session
with the domain's own recorder by ``agentworld demo`` (the ``demo_run`` fixture, shared with
``test_demo``): 3-16 s per domain, so a changed scenario or environment is always measured as it is
today, never through a stale shipped copy.

Threshold (``MAX_SHARED``, 10% of the held-out turns): what is shared legitimately is a state every
session of the environment reaches — measured: terminal 2 of 52 turns (``echo $?`` printing ``1``,
``exit()`` leaving the Python REPL), SWE 2 of 31 (the repository's root listing, an empty
``git status --short``), web 1 of 27 (the account form's "at least 2 characters" error page), MCP 0 of
18, search 0 of 44; at most 6.5%. One leaked held-out session adds more than 10% in every domain
(its smallest multi-turn session: terminal 6 of 52, MCP 3 of 18, search 5 of 44, SWE 5 of 31, web 6 of
27 turns); a leaked recording of any session, however short, fails the by-scenario check. Before
this test: terminal 54 of 54 turns (100%, the held-out scenarios were corpus scenarios), web 7 of 20
(35%), MCP 1 of 18, SWE 2 of 31, search 0 of 44.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentworld.domains.base import DomainPlugin, plugin
from agentworld.domains.heldout import heldout_names
from agentworld.eval.heldout.overlap import pair_overlap
from agentworld.models.retrieval_own import recordings_of
from agentworld.schema import load_samples

REAL = ("terminal", "mcp", "search", "swe", "web")
MAX_SHARED = 0.10


def _plugin(domain: str) -> DomainPlugin:
    found = plugin(domain)
    assert found is not None and found.recorder and found.corpus and found.heldout_scenarios, domain
    return found


@pytest.mark.parametrize("domain", REAL)
def test_no_corpus_trajectory_is_a_heldout_scenario(domain: str) -> None:
    found = _plugin(domain)
    corpus = found.data_file(found.corpus)
    assert corpus is not None
    names = heldout_names(found)
    trajectories = {r.trajectory for r in recordings_of(load_samples([corpus]))}
    assert len(names) >= 4 and trajectories, domain
    leaked = sorted(names & trajectories)
    assert not leaked, f"{domain}: the corpus holds held-out scenarios {leaked}"


@pytest.mark.sandbox
@pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("tmux") is None,
                    reason="needs bubblewrap and tmux (run ./install.sh)")
@pytest.mark.parametrize("domain", REAL)
def test_heldout_recordings_share_few_pairs_with_the_corpus(domain: str,
                                                           demo_run: tuple[Path, Path, str]) -> None:
    found = _plugin(domain)
    out, _, printed = demo_run  # the demo's fresh recordings (record_domain, seed 0): conftest.py
    recording = out / "data" / f"{domain}_test.jsonl"
    if not (recording.is_file() and recording.read_text(encoding="utf-8").strip()):
        pytest.skip(f"{domain}: its real environment is not installed: {printed.strip()}")
    heldout = load_samples([recording])
    assert {r.trajectory for r in recordings_of(heldout)} == heldout_names(found), "every scenario recorded"
    overlap = pair_overlap(heldout, load_samples([found.data_file(found.corpus) or ""]))
    assert overlap.recordings == (), f"{domain}: the corpus holds recordings of {overlap.recordings}"
    shared = f"{len(overlap.shared)} of {overlap.turns} held-out turns"
    assert overlap.rate <= MAX_SHARED, f"{domain}: {shared} are in the corpus: {overlap.shared}"

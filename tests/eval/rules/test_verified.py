"""``verified`` (``rule01``, the GSPO rule reward) accepts an observation only when it is the truth up to
runtime metadata: one changed count, title, URL order, node or line is not verified, in every domain."""

from __future__ import annotations

import re

import pytest

from agentworld.corpus import corpus_path
from agentworld.eval.rules.corruptions import KINDS
from agentworld.eval.rules.scores import score_rules
from agentworld.schema import BenchSample, load_samples, strip_marker


def row(domain: str, sample_id: str) -> BenchSample:
    return next(s for s in load_samples([corpus_path(domain)]) if s.id == sample_id)


def verified(sample: BenchSample, prediction: str) -> bool:
    return score_rules(sample.domain, prediction, sample.ground_truth, sample).verified


def test_swe_a_test_count_is_content_even_when_the_exit_code_matches() -> None:
    sample = row("swe", "inflection-break-ordinal-t3")  # `pytest … | tail`: 1 failed, exit code 0
    summary = "1 failed, 2 passed, 394 deselected in 0.50s"
    assert summary in sample.ground_truth and "Exit Code: 0" in sample.ground_truth
    truth = sample.ground_truth
    assert not verified(sample, truth.replace(summary, "3 passed, 394 deselected in 0.50s"))
    assert not verified(sample, truth.replace(summary, "1 failed, 2 passed, 395 deselected in 0.50s"))
    assert verified(sample, truth.replace(summary, "1 failed, 2 passed, 394 deselected in 1.93s"))  # runtime


def test_search_a_changed_title_or_swapped_urls_are_not_verified() -> None:
    sample = row("search", "asyncio-timeout-t1")
    truth = sample.ground_truth
    assert not verified(sample, truth.replace("High-level API Index", "High-level API Reference"))
    first, second = (re.search(rf"^\[{n}\] (\S+)$", truth, re.M).group(1) for n in (1, 2))  # type: ignore[union-attr]
    swapped = truth.replace(first, "\0").replace(second, first).replace("\0", second)
    assert swapped != truth and not verified(sample, swapped)
    assert verified(sample, truth)


def test_terminal_a_changed_count_is_not_verified_a_changed_host_is() -> None:
    sample = row("terminal", "files-create-cat-t6")
    truth = sample.ground_truth
    assert not verified(sample, truth.replace("\n2 hello.txt", "\n3 hello.txt"))
    assert verified(sample, truth.replace("0527e8047489", "9f3b1c2d4e5a"))  # the container's id: runtime


def test_web_a_changed_node_is_not_verified() -> None:
    sample = row("web", "shop-buy-1-t2")
    truth = sample.ground_truth
    assert not verified(sample, truth.replace("[7] link 'Home'", "[7] link 'Start'"))
    assert not verified(sample, truth.replace("[7] link 'Home'", "[9] link 'Home'"))
    catalog = "\t\t\t[8] link 'Catalog', url='http://localhost:8000/catalog'\n"
    assert catalog in truth and not verified(sample, truth.replace(catalog, ""))


def test_mcp_an_empty_list_or_a_reordered_listing_is_content_key_order_is_not() -> None:
    sample = row("mcp", "memory-people-t1")
    assert not verified(sample, sample.ground_truth.replace('"entities": []', '"entities": [{"name": "x"}]'))
    assert not verified(sample, sample.ground_truth.replace('"entities"', '"entity"'))
    reordered = sample.ground_truth.replace('"entities": [],\n  "relations": []',
                                            '"relations": [],\n  "entities": []')
    assert reordered != sample.ground_truth and verified(sample, reordered)
    listing = next(s for s in load_samples([corpus_path("mcp")])
                   if s.ground_truth.count("[FILE]") >= 2
                   and not strip_marker(s.ground_truth).startswith("{"))
    lines = listing.ground_truth.split("\n")
    i = next(n for n, x in enumerate(lines) if x.startswith("[FILE]"))
    j = next(n for n, x in enumerate(lines) if x.startswith("[FILE]") and n != i and x != lines[i])
    lines[i], lines[j] = lines[j], lines[i]
    assert not verified(listing, "\n".join(lines))


@pytest.mark.parametrize("domain", ["terminal", "mcp", "search", "swe", "web"])
def test_one_change_of_each_kind_is_rarely_verified_on_the_shipped_corpus(domain: str) -> None:
    """The contract's own bound (at most 10% of changed truths verified), here for each kind apart."""
    samples = load_samples([corpus_path(domain)])[::3]
    for kind, make in KINDS.items():
        changed = [(s, c) for s in samples if (c := make(s.ground_truth, s.id)) is not None]
        accepted = [s.id for s, c in changed if verified(s, c)]
        assert changed and len(accepted) <= 0.1 * len(changed), (kind, accepted[:5])
        assert all(verified(s, s.ground_truth) for s, _ in changed)

"""The contract every domain's rules are held to, measured on that domain's real recordings.

Why: a judge-free score is only worth reporting if an answer that knows nothing scores near zero,
the truth near 100, and a score falls as predictions get worse. :func:`measure_contract` computes,
on the same samples: the truth, the trivial baselines (:mod:`agentworld.eval.rules.baselines`), the
retrieval baseline with each trajectory left out of its own index, and the truth corrupted the
way the mock server corrupts it (the same nested, seeded choice of samples, so a higher rate only
adds corrupted samples). :meth:`ContractReport.violations` names what fails; a domain's test
asserts there are none (``tests/eval/rules/test_rules_contract.py``).
"""

from __future__ import annotations

import asyncio
import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import fmean

from agentworld.eval.rules.baselines import BASELINES, baseline_scores
from agentworld.eval.rules.corruptions import KINDS
from agentworld.eval.rules.scores import score_rules
from agentworld.schema import BenchSample, strip_marker, trajectory_id

RATES: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0)


@dataclass(frozen=True)
class ContractReport:
    """Mean rule-tier overall (0–100) of each predictor on one domain's samples."""

    domain: str
    samples: int
    with_content: int
    truth: float
    baselines: dict[str, float]
    """Each trivial predictor (:data:`~agentworld.eval.rules.baselines.BASELINES`) on every sample."""
    baselines_with_content: dict[str, float]
    """The same on the samples whose truth has content."""
    retrieval: float | None
    corruption: tuple[tuple[float, float], ...]
    """(mock corruption rate, mean overall of the corrupted truths) for each rate."""
    retrieval_with_content: float | None = None
    """Retrieval on the samples whose truth has content (where knowing something can pay)."""
    truth_verified: float = 100.0
    """% of samples whose truth ``verified`` accepts: against itself, or, given a second recording of
    the same scenarios (``again``), that recording against the first (runtime metadata may differ)."""
    verified_when_changed: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per kind of change (the mock server's corruption, and each of :data:`~agentworld.eval.
    corruptions.KINDS`): (changed predictions ``verified`` accepted, changed predictions)."""

    def violations(self, *, truth_min: float = 99.0, trivial_max: float = 20.0,
                   trivial_all_max: float | None = None, empty_max: float | None = None,
                   verified_truth_min: float = 95.0, verified_changed_max: float = 10.0,
                   retrieval_beats: Sequence[str] = ("repeat_previous", "frame_only")) -> list[str]:
        """What breaks the contract (empty: it holds). ``trivial_max`` bounds frame-only and empty on
        turns with content; ``trivial_all_max`` frame-only on all turns; ``empty_max`` empty on all;
        ``retrieval_beats`` the baselines leave-one-out retrieval must score above on all turns;
        ``verified_truth_min`` the % of truths verified; ``verified_changed_max`` the % of changed
        predictions verified, for each kind of change."""
        out = []
        if self.truth < truth_min:
            out.append(f"truth {self.truth:.2f} < {truth_min}")
        if self.truth_verified < verified_truth_min:
            out.append(f"truth verified on {self.truth_verified:.2f}% < {verified_truth_min}%")
        for kind, (accepted, changed) in self.verified_when_changed.items():
            if changed and 100 * accepted / changed > verified_changed_max:
                out.append(f"{kind}: {accepted} of {changed} changed predictions verified "
                           f"(> {verified_changed_max}%)")
        for name in ("frame_only", "empty"):
            if self.baselines_with_content[name] > trivial_max:
                got = self.baselines_with_content[name]
                out.append(f"{name} {got:.2f} > {trivial_max} on turns with content")
        if trivial_all_max is not None and self.baselines["frame_only"] > trivial_all_max:
            out.append(f"frame_only {self.baselines['frame_only']:.2f} > {trivial_all_max} on all turns")
        if empty_max is not None and self.baselines["empty"] > empty_max:
            out.append(f"empty {self.baselines['empty']:.2f} > {empty_max}")
        if self.retrieval is not None:
            for name in retrieval_beats:
                if self.baselines[name] >= self.retrieval:
                    out.append(f"{name} {self.baselines[name]:.2f} >= retrieval {self.retrieval:.2f}")
        scores = [s for _, s in self.corruption]
        if any(b > a for a, b in itertools.pairwise(scores)) or scores[-1] >= scores[0]:
            out.append(f"not falling with corruption: {self.corruption}")
        return out


def trajectory_of(sample: BenchSample) -> str:
    """The trajectory a turn-level row belongs to (:func:`agentworld.schema.trajectory_id`)."""
    return trajectory_id(sample.id)


def corrupted_truths(samples: Sequence[BenchSample], rate: float, seed: int = 0) -> list[str]:
    """Each truth, or its corruption where the mock server at ``rate`` (and ``seed``) corrupts it."""
    from agentworld.eval.rules.corruptions import corrupt_observation, hash_uniform

    return [corrupt_observation(s.ground_truth, f"{seed}:{s.id}")
            if hash_uniform(seed, "corrupt", s.id) < rate else s.ground_truth for s in samples]


async def _retrieval_predictions(samples: Sequence[BenchSample]) -> list[str]:
    """Retrieval predictions, each trajectory's own turns left out of the index it is predicted from."""
    from agentworld.eval import model_request
    from agentworld.models.parsing import parse_prediction
    from agentworld.models.retrieval import RetrievalBackend, RetrievalIndex

    groups: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(samples):
        groups[trajectory_of(s)].append(i)
    out = [""] * len(samples)
    for traj, members in groups.items():
        index = RetrievalIndex(list(samples), exclude=lambda row, t=traj: trajectory_of(row) == t)  # type: ignore[misc]
        backend = RetrievalBackend(index)
        for i in members:
            result = await backend.complete(model_request(samples[i], "retrieval", 4096, 0.0))
            out[i] = parse_prediction(result.content)
    return out


def _mean(values: Sequence[float]) -> float:
    return round(fmean(values), 2) if values else 0.0


def verified_when_changed(samples: Sequence[BenchSample], seed: int = 0) -> dict[str, tuple[int, int]]:
    """For the mock server's corruption (every sample corrupted) and each one-change kind: how many
    changed predictions ``verified`` accepts, of how many changed ones (a kind that has nothing to
    change in a sample, or leaves it as it was, does not count)."""
    changes: dict[str, list[str | None]] = {"corruption": list(corrupted_truths(samples, 1.0, seed))}
    changes.update({name: [make(s.ground_truth, f"{seed}:{s.id}") for s in samples]
                    for name, make in KINDS.items()})
    out = {}
    for kind, texts in changes.items():
        changed = [(s, t) for s, t in zip(samples, texts, strict=True)
                   if t is not None and strip_marker(t).strip() != strip_marker(s.ground_truth).strip()]
        accepted = sum(score_rules(s.domain, t, s.ground_truth, s).verified for s, t in changed)
        out[kind] = (accepted, len(changed))
    return out


def _truth_verified(samples: Sequence[BenchSample], again: Sequence[BenchSample] | None) -> float:
    if again is None:
        return _mean([100.0 * score_rules(s.domain, s.ground_truth, s.ground_truth, s).verified
                      for s in samples])
    second = {s.id: s for s in again}
    missing = [s.id for s in samples if s.id not in second]
    if missing:
        raise ValueError(f"the second recording has no row {missing[0]!r} ({len(missing)} of "
                         f"{len(samples)} missing)")
    return _mean([100.0 * score_rules(s.domain, second[s.id].ground_truth, s.ground_truth, s).verified
                  for s in samples])


def measure_contract(samples: Sequence[BenchSample], *, retrieval: bool = True,
                     rates: Sequence[float] = RATES, seed: int = 0,
                     again: Sequence[BenchSample] | None = None) -> ContractReport:
    """Score the truth, the trivial baselines, leave-one-trajectory-out retrieval and corrupted truths,
    and count what ``verified`` accepts: the truth (or ``again``, a second recording of the same
    scenarios, row for row by id) and changed truths (:func:`verified_when_changed`)."""
    samples = list(samples)
    if not samples:
        raise ValueError("the contract needs at least one sample")
    domains = {s.domain for s in samples}
    if len(domains) != 1:
        raise ValueError(f"one domain at a time, not {sorted(domains)}")

    def overall(texts: Sequence[str]) -> list[float]:
        pairs = zip(samples, texts, strict=True)
        return [score_rules(s.domain, t, s.ground_truth, s).overall for s, t in pairs]

    truths = [score_rules(s.domain, s.ground_truth, s.ground_truth, s) for s in samples]
    content = [r.has_content for r in truths]
    trivial = [baseline_scores(s) for s in samples]
    by_name = {name: [t[name] for t in trivial] for name in BASELINES}
    found = overall(asyncio.run(_retrieval_predictions(samples))) if retrieval else None
    return ContractReport(
        domain=domains.pop(), samples=len(samples), with_content=sum(content),
        truth=_mean([r.overall for r in truths]),
        baselines={name: _mean(v) for name, v in by_name.items()},
        baselines_with_content={name: _mean([x for x, c in zip(v, content, strict=True) if c])
                                for name, v in by_name.items()},
        retrieval=None if found is None else _mean(found),
        retrieval_with_content=None if found is None else _mean(
            [x for x, c in zip(found, content, strict=True) if c]),
        corruption=tuple((rate, _mean(overall(corrupted_truths(samples, rate, seed)))) for rate in rates),
        truth_verified=_truth_verified(samples, again),
        verified_when_changed=verified_when_changed(samples, seed))

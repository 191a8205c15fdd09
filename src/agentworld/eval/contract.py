"""The contract every domain's rules are held to, measured on that domain's real recordings.

Why: a judge-free score is only worth reporting if an answer that knows nothing scores near zero,
the truth near 100, and a score falls as predictions get worse. :func:`measure_contract` computes,
on the same samples: the truth, the trivial baselines (:mod:`agentworld.eval.baselines`), the
retrieval baseline with each trajectory left out of its own index, and the truth corrupted the
way the mock server corrupts it (the same nested, seeded choice of samples, so a higher rate only
adds corrupted samples). :meth:`ContractReport.violations` names what fails; a domain's test
asserts there are none (``tests/test_rules_contract.py``).
"""

from __future__ import annotations

import asyncio
import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean

from agentworld.eval.baselines import BASELINES, baseline_scores
from agentworld.eval.rules import score_rules
from agentworld.schema import BenchSample

RATES: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0)


@dataclass(frozen=True)
class ContractReport:
    """Mean rule-tier overall (0–100) of each predictor on one domain's samples."""

    domain: str
    samples: int
    with_content: int
    truth: float
    baselines: dict[str, float]
    """Each trivial predictor (:data:`~agentworld.eval.baselines.BASELINES`) on every sample."""
    baselines_with_content: dict[str, float]
    """The same on the samples whose truth has content."""
    retrieval: float | None
    corruption: tuple[tuple[float, float], ...]
    """(mock corruption rate, mean overall of the corrupted truths) for each rate."""

    def violations(self, *, truth_min: float = 99.0, trivial_max: float = 20.0,
                   trivial_all_max: float | None = None, empty_max: float | None = None) -> list[str]:
        """What breaks the contract (empty: it holds). ``trivial_max`` bounds frame-only and empty on
        turns with content; ``trivial_all_max`` frame-only on all turns; ``empty_max`` empty on all."""
        out = []
        if self.truth < truth_min:
            out.append(f"truth {self.truth:.2f} < {truth_min}")
        for name in ("frame_only", "empty"):
            if self.baselines_with_content[name] > trivial_max:
                got = self.baselines_with_content[name]
                out.append(f"{name} {got:.2f} > {trivial_max} on turns with content")
        if trivial_all_max is not None and self.baselines["frame_only"] > trivial_all_max:
            out.append(f"frame_only {self.baselines['frame_only']:.2f} > {trivial_all_max} on all turns")
        if empty_max is not None and self.baselines["empty"] > empty_max:
            out.append(f"empty {self.baselines['empty']:.2f} > {empty_max}")
        if self.retrieval is not None:
            for name in ("repeat_previous", "frame_only"):
                if self.baselines[name] >= self.retrieval:
                    out.append(f"{name} {self.baselines[name]:.2f} >= retrieval {self.retrieval:.2f}")
        scores = [s for _, s in self.corruption]
        if any(b > a for a, b in itertools.pairwise(scores)) or scores[-1] >= scores[0]:
            out.append(f"not falling with corruption: {self.corruption}")
        return out


def trajectory_of(sample: BenchSample) -> str:
    """The trajectory a turn-level row belongs to (its id without the ``-t<turn>`` suffix)."""
    stem, sep, _ = sample.id.rpartition("-t")
    return stem if sep else sample.id


def corrupted_truths(samples: Sequence[BenchSample], rate: float, seed: int = 0) -> list[str]:
    """Each truth, or its corruption where the mock server at ``rate`` (and ``seed``) corrupts it."""
    from agentworld.serve.mock_server import corrupt_observation, hash_uniform

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


def measure_contract(samples: Sequence[BenchSample], *, retrieval: bool = True,
                     rates: Sequence[float] = RATES, seed: int = 0) -> ContractReport:
    """Score the truth, the trivial baselines, leave-one-trajectory-out retrieval and corrupted truths."""
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
        corruption=tuple((rate, _mean(overall(corrupted_truths(samples, rate, seed)))) for rate in rates))

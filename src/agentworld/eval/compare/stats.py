"""Paired bootstrap confidence intervals for the mean difference between two runs on the same samples.

Why a paired bootstrap: two world models evaluated on the same samples differ far less than the
spread of scores between samples (a hard sample is hard for both), so the per-sample differences
carry the signal. Resampling those differences (not each run's scores separately) gives an interval
for the mean difference that is as narrow as the pairing allows, with no normality assumption —
rubric and rule scores are bounded, lumpy and often bimodal. Percentile intervals, seeded, so the
same inputs give the same interval on every machine.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

MIN_PAIRS = 2
"""Fewer pairs than this give no interval: one difference says nothing about its own spread."""
MAX_DRAW_CELLS = 4_000_000
"""Resample indices drawn per chunk (resamples × samples): bounds memory on the full benchmark."""


def _resampled_means(values: npt.NDArray[np.float64], resamples: int,
                     rng: np.random.Generator) -> npt.NDArray[np.float64]:
    """The means of ``resamples`` bootstrap resamples of ``values`` (drawn in bounded chunks)."""
    n = len(values)
    chunk = max(1, MAX_DRAW_CELLS // n)
    out = np.empty(resamples)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = values[idx].mean(axis=1)
    return out


def _check(resamples: int, confidence: float) -> None:
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence}")


def _interval(means: npt.NDArray[np.float64], confidence: float) -> tuple[float, float]:
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def paired_bootstrap(diffs: Sequence[float], *, resamples: int = 10_000, confidence: float = 0.95,
                     seed: int = 0) -> tuple[float, float] | None:
    """Percentile interval of the mean of paired differences ``diffs``; None with fewer than
    :data:`MIN_PAIRS`.

    Raises:
        ValueError: ``resamples`` below 1 or ``confidence`` outside (0, 1).
    """
    _check(resamples, confidence)
    if len(diffs) < MIN_PAIRS:
        return None
    values = np.asarray(diffs, dtype=np.float64)
    return _interval(_resampled_means(values, resamples, np.random.default_rng(seed)), confidence)


def stratified_bootstrap(groups: Sequence[Sequence[float]], *, resamples: int = 10_000,
                         confidence: float = 0.95, seed: int = 0) -> tuple[float, float] | None:
    """Interval of the mean over groups of each group's mean difference, resampling within groups.

    This is the published "Overall" (the mean of the domain scores): each domain keeps its own
    sample count in every resample, so a large domain never crowds out a small one. Empty groups
    are left out; None with fewer than :data:`MIN_PAIRS` pairs in all.
    """
    _check(resamples, confidence)
    kept = [np.asarray(g, dtype=np.float64) for g in groups if len(g)]
    if sum(len(g) for g in kept) < MIN_PAIRS:
        return None
    rng = np.random.default_rng(seed)
    means = np.mean([_resampled_means(g, resamples, rng) for g in kept], axis=0)
    return _interval(means, confidence)

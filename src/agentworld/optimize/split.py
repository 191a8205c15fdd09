"""The training and validation splits of a domain, and a sample seen under a candidate system prompt.

Why by trajectory: the turns of one session share their history, so a turn in the training split
would leak its neighbours' observations into a validation turn. The split is a seeded hash order of
the trajectories, so it is the same on every run, machine and resume.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from agentworld.errors import DataError
from agentworld.schema import BenchSample


class Split(BaseModel):
    """One domain's samples, cut by trajectory into a training and a validation split."""

    model_config = ConfigDict(frozen=True)

    domain: str
    train: tuple[BenchSample, ...]
    val: tuple[BenchSample, ...]


def trajectory_key(sample: BenchSample) -> str:
    """What the turns of one session share: task, system prompt and first action."""
    first = sample.prompt[0] if sample.prompt else ""
    return hashlib.sha256("\0".join((sample.task, sample.system_str, first)).encode()).hexdigest()


def split_samples(samples: Iterable[BenchSample], val_fraction: float, seed: int) -> dict[str, Split]:
    """Per domain, about ``val_fraction`` of the trajectories (at least one) go to validation.

    Raises:
        DataError: a domain with fewer than two trajectories (one is needed on each side).
    """
    groups: dict[str, dict[str, list[BenchSample]]] = defaultdict(lambda: defaultdict(list))
    for sample in samples:
        groups[sample.domain][trajectory_key(sample)].append(sample)
    splits = {}
    for domain, by_key in groups.items():
        if len(by_key) < 2:
            raise DataError(f"domain {domain!r} has {len(by_key)} trajectory: a validation split needs at "
                            "least 2 (give more data for it)", field="data")
        order = sorted(by_key, key=lambda k: hashlib.sha256(f"{seed}:{k}".encode()).hexdigest())
        n_val = min(len(order) - 1, max(1, round(len(order) * val_fraction)))
        val = {k for k in order[:n_val]}
        splits[domain] = Split(
            domain=domain, train=tuple(s for k, rows in by_key.items() if k not in val for s in rows),
            val=tuple(s for k, rows in by_key.items() if k in val for s in rows))
    return splits


def with_prompt(sample: BenchSample, shipped: str, prompt: str) -> BenchSample:
    """``sample`` with ``prompt`` as its system prompt.

    A row built from the shipped prompt plus per-task context (the mcp domain appends the server's
    tool list) keeps that context: only the shipped part is replaced. Any other system prompt is
    replaced whole.

    >>> s = BenchSample(task="mcp", id="a", prompt=["x"], response=["y"], system_str="P\\n\\n# Tools")
    >>> with_prompt(s, "P\\n", "Q").system_str
    'Q\\n\\n# Tools'
    """
    head = shipped.rstrip()
    rest = sample.system_str[len(head):] if head and sample.system_str.startswith(head) else ""
    return sample.model_copy(update={"system_str": prompt.rstrip() + rest})

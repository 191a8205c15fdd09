"""The two sides of an export: train and eval, written to two files, never one.

The pipeline's ``split`` step marks each sample ``train`` or ``eval`` (unsplit samples count as
``train``). Every export writes the train side to its output and the eval side beside it
(:func:`eval_path_for`: ``train.jsonl`` → ``eval.jsonl``, ``world.jsonl`` → ``world_eval.jsonl``),
so a trainer pointed at the output never sees the evaluation data, and an evaluation pointed at the
eval file never sees what was trained on. :class:`SideGuard` refuses a trajectory on both sides
(which a split by ``source`` allows when two sources hold the same trajectory id, such as two
recordings of one scenario): its later turns would be evaluated on a model trained on its
earlier ones.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, NamedTuple

import orjson

from agentworld.errors import DataError
from agentworld.io import AtomicFile

Side = Literal["train", "eval"]
_TRAIN_STEM = re.compile(r"(^|[._-])train$")


def side_of(sample: Any) -> Side:
    """The side a sample belongs to: its ``split``, or ``train`` when it was never split."""
    return "eval" if sample.split == "eval" else "train"


def eval_path_for(out: Path) -> Path:
    """Where the eval side goes when no path is given: beside ``out``, named after it.

    >>> eval_path_for(Path("data/train.jsonl")), eval_path_for(Path("lf/world.json"))
    (PosixPath('data/eval.jsonl'), PosixPath('lf/world_eval.json'))
    """
    stem, n = _TRAIN_STEM.subn(r"\1eval", out.stem)
    return out.with_name((stem if n else f"{out.stem}_eval") + out.suffix)


def check_paths(out: Path, eval_out: Path) -> None:
    """Refuse an eval path that is the output itself (one file for both sides)."""
    if Path(eval_out).resolve() == Path(out).resolve():
        raise ValueError(f"the eval side needs its own file, not the output itself ({out})")


class SideGuard:
    """Remembers the side of every trajectory seen and refuses one that shows up on the other side.

    Memory: one entry per trajectory (the dedup step keeps one per sample).
    """

    def __init__(self) -> None:
        self._sides: dict[str, Side] = {}

    def add(self, trajectory_id: str, side: Side, sample_id: str) -> bool:
        """Record ``trajectory_id`` on ``side``; True the first time it is seen.

        Raises:
            DataError: it was seen on the other side (names the sample and what to change).
        """
        seen = self._sides.get(trajectory_id)
        if seen is None:
            self._sides[trajectory_id] = side
            return True
        if seen != side:
            raise DataError(f"trajectory {trajectory_id!r} has samples on both sides of the split ({seen} "
                            f"and {side}): two inputs hold the same trajectory id on different sources; "
                            "split by trajectory_id (split.key) or give the trajectories distinct ids",
                            sample_id=sample_id, field="split")
        return False


class SideCounts(NamedTuple):
    """Rows written to each side."""

    train: int
    eval: int


def write_sides(out: Path, eval_out: Path, rows: Iterable[tuple[Side, Any]]) -> SideCounts:
    """Stream ``(side, row)`` pairs into two JSONL files, each replaced atomically when all is written.

    On any error neither file changes. Both files are always written (an empty eval side is an
    empty file), so an eval file of an earlier run never survives beside a new train file.
    """
    check_paths(out, eval_out)
    option = orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
    train, held = AtomicFile(out), None
    try:
        held = AtomicFile(eval_out)
        for side, row in rows:
            (held if side == "eval" else train).write(orjson.dumps(row, option=option))
        train.commit()
        held.commit()
    except BaseException:
        train.discard()
        if held is not None:
            held.discard()
        raise
    return SideCounts(train.count, held.count)


__all__ = ["Side", "SideCounts", "SideGuard", "check_paths", "eval_path_for", "side_of", "write_sides"]

"""What an optimisation run leaves in its folder, and how SFT reads the variants back.

``OUT/variants/<domain>/vN.txt`` is variant N's prompt as plain text (v0: the shipped prompt), and
``vN.json`` its record: round, parent, training and validation scores, the unified diff to its
parent. ``OUT/summary.json`` has one entry per domain: the winner (best on validation), the best
on training, every variant's scores and the failed proposals with their reasons. Files are written
atomically, so a killed run never leaves a half-written one.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from agentworld.errors import DataError
from agentworld.io import atomic_write_text, dumps
from agentworld.optimize.evaluate import Evaluation
from agentworld.report_style import text_table

_VERSION = re.compile(r"^v(\d+)\.txt$")


class Variant(BaseModel):
    """One prompt of a domain: v0 is the shipped one; each later one an optimizer's revision of ``parent``."""

    model_config = ConfigDict(frozen=True)

    domain: str
    version: int
    round: int
    parent: int | None
    prompt: str
    candidate: int | None = None


class Failure(BaseModel):
    """A proposal that gave no new variant, and why."""

    model_config = ConfigDict(frozen=True)

    round: int
    candidate: int
    reason: str
    retried: bool = False
    """A failed request (not a bad reply): not journalled, so a resumed run asks again."""


class VariantLine(BaseModel):
    """A variant's line in the summary."""

    model_config = ConfigDict(frozen=True)

    version: int
    round: int
    parent: int | None
    train: float | None
    val: float | None
    train_errors: int = 0
    val_errors: int = 0


class DomainSummary(BaseModel):
    """One domain's outcome: the winner is decided by the validation score, ties to the earlier variant."""

    model_config = ConfigDict(frozen=True)

    domain: str
    train_samples: int
    val_samples: int
    rows_with_own_prompt: int = 0
    """Rows whose system prompt is not built from the shipped one: each variant replaces it whole."""
    winner: int
    best_train: int
    variants: tuple[VariantLine, ...]
    failed: tuple[Failure, ...]

    def line(self, version: int) -> VariantLine:
        return next(v for v in self.variants if v.version == version)


def best(lines: list[VariantLine], split: str) -> int:
    """The version with the highest score on ``split`` (ties: the lowest version, i.e. the least changed)."""
    scored = [(getattr(v, split), v.version) for v in lines if getattr(v, split) is not None]
    return min(scored, key=lambda p: (-p[0], p[1]))[1] if scored else 0


def prompt_diff(parent: str | None, prompt: str, version: int) -> str:
    """Unified diff from the parent's prompt to this one ('' for v0)."""
    if parent is None:
        return ""
    return "\n".join(difflib.unified_diff(parent.splitlines(), prompt.splitlines(), "parent", f"v{version}",
                                          lineterm=""))


def write_variant(out: Path, variant: Variant, parent: str | None, train: Evaluation | None,
                  val: Evaluation | None) -> None:
    """``variants/<domain>/vN.txt`` and ``vN.json``."""
    folder = out / "variants" / variant.domain
    atomic_write_text(folder / f"v{variant.version}.txt", variant.prompt)
    record: dict[str, Any] = {
        "domain": variant.domain, "version": variant.version, "round": variant.round,
        "parent": variant.parent, "candidate": variant.candidate, "train": train.score if train else None,
        "val": val.score if val else None, "train_errors": train.errors if train else None,
        "val_errors": val.errors if val else None,
        "diff_to_parent": prompt_diff(parent, variant.prompt, variant.version)}
    atomic_write_text(folder / f"v{variant.version}.json", dumps(record) + "\n")


def write_summary(out: Path, summaries: list[DomainSummary]) -> None:
    atomic_write_text(out / "summary.json",
                      dumps({"domains": {s.domain: s.model_dump(mode="json") for s in summaries}}) + "\n")


def render_table(summaries: list[DomainSummary]) -> str:
    """The terminal summary: one line per variant, the winner and the best-on-train marked."""
    rows: list[tuple[str, ...]] = []
    for s in summaries:
        for v in s.variants:
            errors = v.train_errors + v.val_errors
            note = ", ".join(n for n, on in (("winner (validation)", v.version == s.winner),
                                             ("best on train", v.version == s.best_train),
                                             (f"{errors} failed predictions scored 0", errors > 0)) if on)
            rows.append((s.domain, f"v{v.version}", str(v.round), "" if v.parent is None else f"v{v.parent}",
                         _num(v.train), _num(v.val), note))
    lines = text_table(("domain", "variant", "round", "parent", "train", "val", ""), rows, left=7)
    for s in summaries:
        if s.rows_with_own_prompt:
            total = s.train_samples + s.val_samples
            lines.append(f"{s.domain}: {s.rows_with_own_prompt} of {total} rows carry a system prompt not "
                         "built from the shipped one; each variant replaced it whole")
        lines += [f"{s.domain}: round {f.round} proposal {f.candidate + 1} failed: {f.reason}"
                  for f in s.failed]
    return "\n".join(lines)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def load_variants(folder: Path) -> dict[str, list[str]]:
    """The stored prompts per domain, in version order (v0 first), from an optimisation output folder.

    Raises:
        DataError: ``folder`` has no ``variants/<domain>/vN.txt`` files.
    """
    root = folder / "variants"
    found: dict[str, list[str]] = {}
    for domain_dir in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
        files = sorted(((int(m.group(1)), p) for p in domain_dir.iterdir()
                        if (m := _VERSION.match(p.name))), key=lambda item: item[0])
        if files:
            found[domain_dir.name] = [p.read_text("utf-8") for _, p in files]
    if not found:
        raise DataError("no variants/<domain>/vN.txt files: not a folder written by 'agentworld optimize "
                        "prompts'", path=str(folder), field="system_prompts_from")
    return found

"""The run folders of ``eval compare``: read, labelled, checked to be comparable, and each sample's
value of a metric read from them (or the reason it has none, which the tables count).

Why the checks: a paired difference only means something when both runs answered the same
samples of the same data. Runs over different data files (by the ``data_sha256`` fingerprint every
run stores) are refused outright, naming the runs; runs over the same data but different subsets
(``--limit``, ``--domains``, an unfinished run) are compared on the samples they share, with a
warning saying which run lacks what. A rubric judged by different judges is flagged too: its
difference would measure the judges as much as the world models.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld.errors import AgentWorldError
from agentworld.eval.records import JudgmentRow, PredictionRow, RuleRow
from agentworld.eval.runfolder import RunFolder, require_run
from agentworld.redact import redact_url

EXAMPLES = 3
"""Sample ids named in a warning before "…"."""


@dataclass(frozen=True)
class LoadedRun:
    """One run folder's stored config and journals, under the label the tables use."""

    label: str
    path: Path
    config: dict[str, Any]
    predictions: dict[str, PredictionRow]
    judgments: dict[str, JudgmentRow]
    rules: dict[str, RuleRow]

    @property
    def infer(self) -> dict[str, Any]:
        return dict(self.config.get("infer") or {})

    @property
    def judge(self) -> dict[str, Any]:
        return dict(self.config.get("judge") or {})

    def value(self, sid: str, metric: str) -> float | str:
        """The sample's value of ``metric`` (``tier.name``, 0–100) in this run, or why it has none."""
        pred = self.predictions.get(sid)
        if pred is None:
            return "missing"
        if pred.error:
            return "prediction error"
        tier, name = metric.split(".", 1)
        if tier == "rule":
            row = self.rules.get(sid)
            if row is None:
                return "no rule score"
            value = row.rule.get(name)
            if isinstance(value, bool):
                return 100.0 if value else 0.0
            if value is None:
                return "rule does not apply"
            if not isinstance(value, int | float) or not math.isfinite(value):
                return f"rule {name} not a number"
            return float(value)
        judged = self.judgments.get(sid)
        if judged is None:
            return "not judged"
        if judged.mode != "rubric":
            return f"judged in {judged.mode} mode"
        if judged.failed:
            return f"judge {judged.status}"
        return _score(judged.total_score if name == "total" else judged.scores.get(name, 0))

    def describe(self) -> dict[str, Any]:
        """What produced the run, for the table header and the HTML page (URLs without credentials)."""
        infer, judge = self.infer, self.judge
        url = infer.get("model_base_url")
        return {"label": self.label, "path": str(self.path), "model": infer.get("model"),
                "model_base_url": redact_url(url) if isinstance(url, str) else None,
                "temperature": infer.get("temperature"), "judge_model": judge.get("judge_model"),
                "data": [Path(str(p)).name for p in infer.get("data") or []],
                "samples": len(self.predictions)}


def _score(raw: Any) -> float | str:
    """A 1–5 judge score on 0–100, or why it does not count (0 is "not scored", as officially)."""
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        return "score not a number"
    if raw == 0:
        return "dimension not scored"
    return (raw - 1) / 4 * 100 if 1 <= raw <= 5 else "score out of range 1-5"


def _labels(paths: Sequence[Path]) -> list[str]:
    """Folder names, or the paths as given where two folders share a name."""
    names = [p.name or str(p) for p in paths]
    return [name if names.count(name) == 1 else str(path) for name, path in zip(names, paths, strict=True)]


def load_runs(paths: Sequence[Path]) -> list[LoadedRun]:
    """Read every run folder (each must be a run written by ``eval run`` or ``eval infer``).

    Raises:
        AgentWorldError: fewer than two runs, a folder given twice, or a folder that is not a run.
    """
    if len(paths) < 2:
        raise AgentWorldError("give at least two run folders to compare (--run A --run B)")
    resolved = [p.resolve() for p in paths]
    for i, path in enumerate(resolved):
        if path in resolved[:i]:
            raise AgentWorldError(f"{paths[i]}: run folder given twice")
    runs = []
    for label, path in zip(_labels(paths), paths, strict=True):
        config = require_run(path)
        folder = RunFolder(path)
        runs.append(LoadedRun(label=label, path=path, config=config, predictions=folder.predictions(),
                              judgments=folder.judgments(), rules=folder.rules()))
    return runs


def pick_baseline(runs: Sequence[LoadedRun], baseline: str | None) -> LoadedRun:
    """The run named by ``--baseline`` (its label or its path), else the first run.

    Raises:
        AgentWorldError: ``baseline`` names none of the runs (the labels are listed).
    """
    if baseline is None:
        return runs[0]
    for run in runs:
        if baseline == run.label or Path(baseline).resolve() == run.path.resolve():
            return run
    raise AgentWorldError(f"--baseline {baseline!r} is none of the runs; give one of: "
                          + ", ".join(run.label for run in runs))


def check_same_data(runs: Sequence[LoadedRun], allow_different: bool = False) -> list[str]:
    """Refuse runs over different data (a warning with ``allow_different``); warnings for runs whose
    data cannot be verified.

    Raises:
        AgentWorldError: two runs stored different data fingerprints (both runs and files named).
    """
    warnings: list[str] = []
    known = [run for run in runs if run.infer.get("data_sha256")]
    for run in runs:
        if not run.infer.get("data_sha256"):
            warnings.append(f"{run.label}: no data fingerprint in config.json (an old run): its data "
                            "cannot be checked against the other runs'")
    first = known[0] if known else None
    for run in known[1:]:
        assert first is not None
        if run.infer["data_sha256"] == first.infer["data_sha256"]:
            continue
        files = [", ".join(r.describe()["data"]) or "?" for r in (first, run)]
        prints = [r.infer["data_sha256"][:12] for r in (first, run)]
        what = (f"runs {first.label} and {run.label} were evaluated on different data ({files[0]} vs "
                f"{files[1]}, fingerprints {prints[0]} vs {prints[1]})")
        if not allow_different:
            raise AgentWorldError(f"{what}: their samples cannot be paired; compare runs over the same data "
                                  "files (or pass --allow-different-data to pair the samples by id)")
        warnings.append(f"{what}: samples paired by id (--allow-different-data)")
    return warnings


def _examples(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:EXAMPLES])
    return shown + (", …" if len(ids) > EXAMPLES else "")


def check_same_samples(runs: Sequence[LoadedRun]) -> list[str]:
    """Warnings for runs that lack samples another run has (compared on the shared ones only).

    Raises:
        AgentWorldError: two runs share no sample at all.
    """
    every = sorted(set().union(*(run.predictions for run in runs)))
    warnings = []
    for run in runs:
        if not run.predictions:
            raise AgentWorldError(f"{run.label}: the run has no predictions yet (predictions.jsonl is empty)")
        missing = [sid for sid in every if sid not in run.predictions]
        if missing:
            settings = {k: run.infer.get(k) for k in ("limit", "domains") if run.infer.get(k)}
            why = f" (its settings: {settings})" if settings else " (an unfinished run?)"
            warnings.append(f"{run.label} lacks {len(missing)} of the {len(every)} samples the runs hold"
                            f"{why}: {_examples(missing)}; those are compared only where present")
    for i, run in enumerate(runs):
        for other in runs[i + 1:]:
            if not set(run.predictions) & set(other.predictions):
                raise AgentWorldError(f"runs {run.label} and {other.label} share no sample: nothing to pair")
    judges = {run.label: run.judge.get("judge_model") for run in runs if run.judgments}
    if len(set(judges.values())) > 1:
        named = ", ".join(f"{label}: {judge}" for label, judge in judges.items())
        warnings.append(f"rubric judged by different judges ({named}): its differences mix judges and "
                        "world models")
    return warnings

"""The check report: which worlds were kept, which were rejected, at which stage and why.

Why a funnel: checks run cheapest first and a world leaves at the first stage it fails, so the
counts per stage say where a generator loses its worlds (``report.json``), and the HTML page lets a
person read each rejection's reason without tooling. Every text in the page comes from generated
(untrusted) worlds, so all of it is escaped.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agentworld.io import atomic_write_text, dumps
from agentworld.report_style import Html, html_table, page
from agentworld.report_style import escape as _e

STAGES: tuple[str, ...] = ("load", "schema", "references", "goal", "reference_plan", "probe", "duplicates")
"""The check stages, in the order a world goes through them."""


class CheckThresholds(BaseModel):
    """What the checks tolerate (written into the report)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    duplicate_similarity: float = Field(0.9, ge=0, le=1, description="A world whose similarity to an earlier "
                                        "kept world reaches this is a near-duplicate (0-1).")
    text_weight: float = Field(0.5, ge=0, le=1, description="Weight of the scenario-text cosine in the "
                               "similarity; the rest is the Jaccard similarity of the tool names.")
    max_contradiction_rate: float = Field(0.1, ge=0, le=1, description="Largest share of probe steps whose "
                                          "world-model answer may contradict the state ledger.")
    max_plan_steps: int = Field(50, ge=1, le=10_000, description="Longest reference plan a task may have "
                                "(each step is a world-model call).")
    probe_max_steps: int = Field(64, ge=1, le=10_000, description="Longest probe rollout, in steps.")
    max_reasks: int = Field(1, ge=0, le=10, description="Times the simulator re-asks a contradicting answer.")
    seed: int = Field(0, description="Seed of the simulated episodes.")


class Rejection(BaseModel):
    """One reason a world was rejected (a world may fail a stage for several reasons)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: str
    """Machine-readable reason, e.g. ``unknown_tool`` or ``reference_plan_fails``."""
    detail: str
    """What exactly was wrong, for a person."""
    task: str | None = None
    """Id of the task concerned, if any."""


class WorldVerdict(BaseModel):
    """The outcome for one world folder."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    name: str = ""
    kept: bool
    stage: str | None = None
    """The stage that rejected it (``None`` when kept)."""
    rejections: list[Rejection] = Field(default_factory=list)
    probe_steps: int = 0
    """Steps of the probe rollout the world model answered."""
    probe_contradictions: int = 0
    """Probe steps whose first answer contradicted the ledger."""


class StageCount(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    stage: str
    checked: int
    kept: int
    rejected: int
    reasons: dict[str, int] = Field(default_factory=dict)
    """Worlds rejected here per reason (a world failing for two reasons counts under both)."""


class CheckReport(BaseModel):
    """Everything :func:`agentworld.synth.checks.run_checks` decided (written as ``report.json``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    worlds: list[WorldVerdict]
    thresholds: dict[str, object] = Field(default_factory=dict)
    skipped: list[str] = Field(default_factory=list)
    """Stages not run (the simulator stages without a world model)."""

    @property
    def kept(self) -> list[WorldVerdict]:
        return [w for w in self.worlds if w.kept]

    @property
    def rejected(self) -> list[WorldVerdict]:
        return [w for w in self.worlds if not w.kept]

    def stages(self) -> list[StageCount]:
        """Checked/kept/rejected per stage, in funnel order."""
        out, remaining = [], len(self.worlds)
        for stage in STAGES:
            if stage in self.skipped:
                continue
            here = [w for w in self.worlds if w.stage == stage]
            reasons = Counter(r for w in here for r in {x.reason for x in w.rejections})
            out.append(StageCount(stage=stage, checked=remaining, kept=remaining - len(here),
                                  rejected=len(here), reasons=dict(sorted(reasons.items()))))
            remaining -= len(here)
        return out

    def reasons(self) -> dict[str, int]:
        """Rejected worlds per reason, over all stages."""
        counts = Counter(r for w in self.rejected for r in {x.reason for x in w.rejections})
        return dict(sorted(counts.items()))

    def summary(self) -> dict[str, object]:
        return {"worlds": len(self.worlds), "kept": len(self.kept), "rejected": len(self.rejected),
                "reasons": self.reasons(), "stages": [s.model_dump() for s in self.stages()]}


def write_report(report: CheckReport, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``report.json`` and ``report.html`` into ``out_dir`` (atomically); returns both paths."""
    out = Path(out_dir)
    data = {"summary": report.summary(), **report.model_dump(mode="json")}
    json_path, html_path = out / "report.json", out / "report.html"
    atomic_write_text(json_path, dumps(data) + "\n")
    atomic_write_text(html_path, render_html(report))
    return json_path, html_path


def render_html(report: CheckReport) -> str:
    """A self-contained page: the funnel table, then one row per world with its reasons."""
    stages = [[s.stage, s.checked, s.kept, s.rejected, ", ".join(f"{k}: {v}" for k, v in s.reasons.items())]
              for s in report.stages()]
    worlds = []
    for w in report.worlds:
        why = "".join(f"<li><b>{_e(r.reason)}</b>{' (task ' + _e(r.task) + ')' if r.task else ''}: "
                      f"{_e(r.detail)}</li>" for r in w.rejections)
        outcome = "kept" if w.kept else f"rejected at {w.stage}"
        worlds.append([w.name, Html(f"<code>{_e(w.path)}</code>"), outcome,
                       f"{w.probe_contradictions}/{w.probe_steps}", Html(f"<ul>{why}</ul>" if why else "")])
    skipped = f'<p class="note">Stages not run: {_e(", ".join(report.skipped))}</p>' if report.skipped else ""
    body = [skipped, "<h2>Per stage</h2>",
            html_table(["stage", "checked", "kept", "rejected", "reasons"], stages, left=[4]),
            "<h2>Worlds</h2>",
            html_table(["name", "folder", "outcome", "probe contradictions", "reasons"], worlds,
                       left=[1, 2, 4], row_classes=["good" if w.kept else "bad" for w in report.worlds],
                       cell_classes={2: "outcome"}),
            f"<h2>Thresholds</h2><pre>{_e(report.thresholds)}</pre>"]
    return page("synth check", f"World checks: {len(report.kept)} kept of {len(report.worlds)}", body,
                stamp=False)

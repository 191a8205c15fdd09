"""Perturbation curricula for a world folder: the standard control specs, written to ``controls/*.yaml``.

Why these four: they are what real services do to an agent that a clean synthetic world never does —
fail now and then (``intermittent``: 5xx and timeouts), return lists a page at a time
(``pagination``), return part of the data (``partial``) and return an earlier, outdated result
(``stale``). Each is a :class:`ControlSpec` of the simulator's own seeded fault rules, so a sweep
(``agentworld train rollout --world DIR --sweep-controls``) injects exactly these, reproducibly.
Data perturbations apply to the world's read tools only: paging or cutting the reply of a call that
changes state would hide whether it happened, which is a different lesson.

The rates are high on purpose: a curriculum teaches only in the episodes where it fires. A task of
3–4 calls with one list read and one repeated read meets a fault in ≥ 80% of its episodes at these
rates (measured on 1,000 offline worlds: docs/guides/synthesize.md, "Many worlds per seed"); at the old 0.2
intermittent and 0.5 stale rates half the episodes of such a task ran clean.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from agentworld.domains.mcp.ledger import is_mutating
from agentworld.domains.spec import ControlSpec, FaultRule
from agentworld.io import atomic_write_text
from agentworld.synth.world import World

__all__ = ["CurriculumRates", "standard_controls", "write_controls"]


class CurriculumRates(BaseModel):
    """How often each standard perturbation fires (per eligible call, seeded)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    intermittent: float = Field(0.5, ge=0, le=1, description="Chance a call fails (half 503, half timeout).")
    pagination_page_size: int = Field(2, ge=1, le=1000, description="Items per page of a paged read.")
    partial: float = Field(0.6, ge=0, le=1, description="Chance a read returns part of its data.")
    partial_keep_fraction: float = Field(0.5, ge=0, le=1,
                                         description="Fraction of the items a partial read keeps.")
    stale: float = Field(0.9, ge=0, le=1, description="Chance a repeated read returns the earlier result.")


def standard_controls(world: World, rates: CurriculumRates | None = None) -> dict[str, ControlSpec]:
    """The standard control specs of ``world`` by name (data perturbations only when it has read tools)."""
    r = rates or CurriculumRates()
    reads = [t.name for t in world.tools if not is_mutating(t.name)]
    specs = {"intermittent": ControlSpec(faults=[
        FaultRule(kind="server_error", rate=r.intermittent / 2),
        FaultRule(kind="timeout", rate=r.intermittent / 2)])}
    if reads:
        specs["pagination"] = ControlSpec(faults=[
            FaultRule(kind="pagination", rate=1.0, tools=reads,
                      params={"page_size": r.pagination_page_size})])
        specs["partial"] = ControlSpec(faults=[
            FaultRule(kind="truncated", rate=r.partial, tools=reads,
                      params={"keep_fraction": r.partial_keep_fraction})])
        specs["stale"] = ControlSpec(faults=[FaultRule(kind="stale", rate=r.stale, tools=reads)])
    return specs


def write_controls(world_dir: str | Path, controls: dict[str, ControlSpec], *,
                   overwrite: bool = False) -> list[Path]:
    """Write ``controls`` as ``world_dir/controls/<name>.yaml`` (atomically); returns the files written.

    An existing spec file is kept unless ``overwrite``: a user's hand-tuned curriculum is never lost.
    """
    folder = Path(world_dir) / "controls"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, spec in sorted(controls.items()):
        path = folder / f"{name}.yaml"
        if path.exists() and not overwrite:
            continue
        atomic_write_text(path, yaml.safe_dump(spec.model_dump(mode="json", exclude_defaults=True),
                                               sort_keys=False))
        written.append(path)
    return written

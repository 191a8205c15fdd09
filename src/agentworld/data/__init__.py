"""Data pipeline: ingest real trajectories, clean, expand, mask, split and export for training.

The function ``ingest.ingest`` is not re-exported here: the name would shadow the ``ingest``
submodule on the package (``from agentworld.data import ingest`` must stay the module).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworld.lazy import lazy_exports

if TYPE_CHECKING:
    from agentworld.data.ingest import (
        Converter,
        IngestReport,
        detect_format,
        get_converter,
        register_converter,
    )
    from agentworld.data.masking import MaskConfig, MaskThresholds, classify, mask, turn_signals
    from agentworld.data.pipeline import PipelineConfig, PipelineReport, iter_samples, run_pipeline
    from agentworld.data.process import (
        DatasetStats,
        StepCounter,
        dedup,
        drop_no_change,
        expand,
        samples_to_bench_rows,
        skip_retry_cycles,
        split_by_source,
    )
    from agentworld.data.types import MASK_CATEGORIES, LossMask, StepStats, TrainSample, TurnStats

_EXPORTS = {
    "Converter": "agentworld.data.ingest",
    "IngestReport": "agentworld.data.ingest",
    "detect_format": "agentworld.data.ingest",
    "get_converter": "agentworld.data.ingest",
    "register_converter": "agentworld.data.ingest",
    "MaskConfig": "agentworld.data.masking",
    "MaskThresholds": "agentworld.data.masking",
    "classify": "agentworld.data.masking",
    "mask": "agentworld.data.masking",
    "turn_signals": "agentworld.data.masking",
    "PipelineConfig": "agentworld.data.pipeline",
    "PipelineReport": "agentworld.data.pipeline",
    "iter_samples": "agentworld.data.pipeline",
    "run_pipeline": "agentworld.data.pipeline",
    "DatasetStats": "agentworld.data.process",
    "StepCounter": "agentworld.data.process",
    "dedup": "agentworld.data.process",
    "drop_no_change": "agentworld.data.process",
    "expand": "agentworld.data.process",
    "samples_to_bench_rows": "agentworld.data.process",
    "skip_retry_cycles": "agentworld.data.process",
    "split_by_source": "agentworld.data.process",
    "MASK_CATEGORIES": "agentworld.data.types",
    "LossMask": "agentworld.data.types",
    "StepStats": "agentworld.data.types",
    "TrainSample": "agentworld.data.types",
    "TurnStats": "agentworld.data.types",
}
__all__ = [
    "MASK_CATEGORIES",
    "Converter",
    "DatasetStats",
    "IngestReport",
    "LossMask",
    "MaskConfig",
    "MaskThresholds",
    "PipelineConfig",
    "PipelineReport",
    "StepCounter",
    "StepStats",
    "TrainSample",
    "TurnStats",
    "classify",
    "dedup",
    "detect_format",
    "drop_no_change",
    "expand",
    "get_converter",
    "iter_samples",
    "mask",
    "register_converter",
    "run_pipeline",
    "samples_to_bench_rows",
    "skip_retry_cycles",
    "split_by_source",
    "turn_signals",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

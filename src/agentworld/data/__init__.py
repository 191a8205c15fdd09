"""Data pipeline: ingest real trajectories, clean, expand, mask, split and export for training.

The function ``ingest.ingest`` is not re-exported here: the name would shadow the ``ingest``
submodule on the package (``from agentworld.data import ingest`` must stay the module).
"""

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

__all__ = [
    "MASK_CATEGORIES", "Converter", "DatasetStats", "IngestReport", "LossMask", "MaskConfig",
    "MaskThresholds", "PipelineConfig", "PipelineReport", "StepCounter", "StepStats", "TrainSample",
    "TurnStats", "classify",
    "dedup", "detect_format", "drop_no_change", "expand", "get_converter", "iter_samples", "mask",
    "register_converter", "run_pipeline", "samples_to_bench_rows", "skip_retry_cycles", "split_by_source",
    "turn_signals",
]

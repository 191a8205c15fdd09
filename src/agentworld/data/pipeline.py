"""The streaming pipeline: inputs → trajectory steps → expand → sample steps → export, from one config.

A :class:`PipelineConfig` (YAML or JSON) names the inputs, the ordered steps with their options,
the mask and split settings and the output. :func:`run_pipeline` pulls samples through the chain
one at a time (memory stays flat in the input size, except ``dedup``'s 16 bytes per sample and
the export's side of each trajectory id, which keeps a trajectory off both sides of the split),
writes the output through :func:`agentworld.data.export.export` (the ``samples`` format is
TrainSample JSONL itself): the train side to ``output.path``, the eval side beside it
(``output.eval_path``, default ``eval.jsonl`` for ``train.jsonl``), and ``stats.json``. Every file is
replaced atomically, so a rerun overwrites cleanly and a crash leaves the previous run's files.

Example config::

    inputs:
      - {path: corpus/terminal.jsonl}                 # format: auto
      - {path: logs/tau.json, format: openai-chat, on_error: skip}
    steps: [skip_retry_cycles, {name: drop_no_change, options: {domains: [web, android]}},
            expand, dedup, mask, split]
    mask: {keep_ratios: {retrieval: 0.5}}
    split: {eval_fraction: 0.1, key: source}
    output: {format: trl, path: out/train.jsonl}     # and out/eval.jsonl
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from rich.console import Console
from rich.table import Table

from agentworld.data import process as proc
from agentworld.data.ingest import IngestReport, RecordSource, ingest_plain
from agentworld.data.masking import MaskConfig, mask
from agentworld.data.process import AnySample, DatasetStats, DatasetTally, StepCounter, expand_plain
from agentworld.data.records import PlainSample
from agentworld.data.types import StepStats, TrainSample
from agentworld.errors import DataError
from agentworld.io import atomic_write_jsonl, atomic_write_text

Step = Callable[..., Iterator[Any]]
"""A chain step: ``(stream, counter, **options) -> stream``."""
TRAJECTORY_STEPS: dict[str, Step] = {
    "skip_retry_cycles": proc.skip_retry_cycles, "drop_no_change": proc.drop_no_change}
SAMPLE_STEPS: dict[str, Step] = {
    "dedup": proc.dedup, "mask": mask, "split": proc.split_by_source}
CONFIGURED_ELSEWHERE = {"mask": "mask", "split": "split"}
"""Steps whose settings live in their own config section, not in ``options``."""
DEFAULT_STEPS = ["skip_retry_cycles", "drop_no_change", "expand", "dedup", "mask", "split"]


class InputSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: Path
    format: str = "auto"
    on_error: Literal["raise", "skip"] = "raise"
    options: dict[str, Any] = Field(default_factory=dict)
    """Converter constructor options (e.g. ``domain`` for ``openai-chat``/``generic``)."""

    @model_validator(mode="before")
    @classmethod
    def _from_path(cls, value: Any) -> Any:
        """A bare path (``--data FILE`` on the command line, ``- FILE`` in a config) is ``{path: FILE}``."""
        return {"path": value} if isinstance(value, (str, Path)) else value


class StepSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _known(self) -> StepSpec:
        fn = TRAJECTORY_STEPS.get(self.name) or SAMPLE_STEPS.get(self.name)
        if fn is None and self.name != "expand":
            raise ValueError(f"unknown step {self.name!r}; known: "
                             f"{', '.join([*TRAJECTORY_STEPS, 'expand', *SAMPLE_STEPS])}")
        if self.options and (fn is None or self.name in CONFIGURED_ELSEWHERE):
            hint = f" (use the {self.name!r} section)" if self.name in CONFIGURED_ELSEWHERE else ""
            raise ValueError(f"step {self.name!r} takes no options here{hint}")
        allowed = set(inspect.signature(fn).parameters) - {"trajs", "samples", "stats"} if fn else set()
        unknown = set(self.options) - allowed
        if unknown:
            raise ValueError(f"unknown option(s) {sorted(unknown)} for {self.name!r}; "
                             f"allowed: {sorted(allowed)}")
        return self


class SplitConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    eval_fraction: float = Field(0.1, ge=0.0, le=1.0)
    key: str = "source"
    """What stays on one side: ``source``, ``trajectory_id``, ``task``, ``domain`` or ``meta.<name>``."""


class OutputSpec(BaseModel):
    """Where the pipeline's samples go: the train side to ``path``, the eval side to ``eval_path``."""

    model_config = ConfigDict(extra="forbid")

    format: str = "samples"
    path: Path
    """The train side (a folder for ``hf-datasets``, whose ``test`` split is the eval side)."""
    eval_path: Path | None = None
    """The eval side; default beside ``path`` (``train.jsonl`` → ``eval.jsonl``, else ``<stem>_eval``)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Passed to ``export`` (e.g. ``keep_masked``, ``tokenizer``, ``style``)."""


class PipelineConfig(BaseModel):
    """Everything one run needs; relative paths in a file are relative to that file."""

    model_config = ConfigDict(extra="forbid")

    inputs: list[InputSpec] = Field(min_length=1)
    steps: list[StepSpec] = Field(default_factory=lambda: [StepSpec(name=n) for n in DEFAULT_STEPS])
    mask: MaskConfig = Field(default_factory=MaskConfig)
    split: SplitConfig = Field(default_factory=SplitConfig)
    output: OutputSpec
    seed: int = 0

    @field_validator("steps")
    @classmethod
    def _ordered(cls, steps: list[StepSpec]) -> list[StepSpec]:
        names = [s.name for s in steps]
        if names.count("expand") > 1:
            raise ValueError("'expand' may appear once")
        if "expand" not in names:  # trajectory steps first, then the expansion
            at = sum(1 for n in names if n in TRAJECTORY_STEPS)
            steps = [*steps[:at], StepSpec(name="expand"), *steps[at:]]
            names = [s.name for s in steps]
        pivot = names.index("expand")
        for i, name in enumerate(names):
            if (i < pivot) != (name in TRAJECTORY_STEPS) and name != "expand":
                side, kind = ("before", "trajectories") if name in TRAJECTORY_STEPS else ("after", "samples")
                raise ValueError(f"step {name!r} works on {kind}: put it {side} 'expand'")
        return steps

    @classmethod
    def load(cls, path: str | Path) -> PipelineConfig:
        """Read a YAML/JSON config; errors name the file and the field (``steps.2.options``)."""
        from agentworld.configfile import load_config_file

        path = Path(path)
        config = load_config_file(cls, path)
        return config.relative_to(path.parent)

    def relative_to(self, base: Path) -> PipelineConfig:
        """A copy whose relative input/output paths are taken from ``base``."""
        inputs = [i.model_copy(update={"path": base / i.path}) for i in self.inputs]
        held = self.output.eval_path
        output = self.output.model_copy(update={"path": base / self.output.path,
                                                "eval_path": base / held if held is not None else None})
        return self.model_copy(update={"inputs": inputs, "output": output})


# -- running -----------------------------------------------------------------------------------------

class PipelineReport(BaseModel):
    steps: list[StepStats]
    ingest: list[IngestReport]
    dataset: DatasetStats
    output: dict[str, Any]
    elapsed_s: float


def _trajectories(config: PipelineConfig, reports: list[IngestReport],
                  source: RecordSource | None) -> Iterator[Any]:
    for spec in config.inputs:
        report = IngestReport()
        reports.append(report)
        yield from ingest_plain(spec.path, spec.format, on_error=spec.on_error, report=report, source=source,
                                **spec.options)


def iter_samples(config: PipelineConfig, *, counters: list[StepCounter] | None = None,
                 reports: list[IngestReport] | None = None) -> Iterator[TrainSample]:
    """The configured chain as one lazy iterator of final samples (for custom sinks).

    ``counters``/``reports``, when given, are filled with one tally per step and per input.
    """
    for sample in plain_samples(config, counters=counters, reports=reports):
        yield sample.to_model()


def plain_samples(config: PipelineConfig, *, counters: list[StepCounter] | None = None,
                  reports: list[IngestReport] | None = None, source: RecordSource | None = None,
                  steps: Mapping[str, Step] | None = None) -> Iterator[PlainSample]:
    """:func:`iter_samples` as the plain records the chain passes along (:mod:`agentworld.data.records`).

    Args:
        source: where every input's records come from (default: each whole file); the scale-out
            passes a shard's byte range.
        steps: step functions by name replacing those of :data:`TRAJECTORY_STEPS` and
            :data:`SAMPLE_STEPS` for this run (the scale-out's seeded ``dedup``).
    """
    stream: Iterator[Any] = _trajectories(config, reports if reports is not None else [], source)
    table = {**TRAJECTORY_STEPS, **SAMPLE_STEPS, **(steps or {})}
    for spec in config.steps:
        counter = StepCounter(spec.name)
        if counters is not None:
            counters.append(counter)
        if spec.name == "expand":
            stream = expand_plain(stream, counter)
        elif spec.name == "mask":
            stream = mask(stream, config.mask, config.seed, counter)
        elif spec.name == "split":
            split = config.split
            stream = proc.split_by_source(stream, split.eval_fraction, config.seed, counter, key=split.key)
        else:
            stream = table[spec.name](stream, counter, **spec.options)
    return stream


def write_jsonl_stream(path: Path, rows: Iterable[Any]) -> int:
    """Write rows one by one into a temporary file beside ``path``, then rename it into place."""
    return atomic_write_jsonl(path, rows)


def _write_output(samples: Iterable[AnySample], spec: OutputSpec) -> dict[str, Any]:
    """Export ``samples`` as ``spec`` says: the train side to ``spec.path``, the eval side beside it."""
    from agentworld.data.export import export

    try:
        # plain samples carry TrainSample's attributes, which is all the exporters read (records.py)
        return export(cast(Iterable[TrainSample], samples), spec.format, spec.path, eval_out=spec.eval_path,
                      **spec.options).model_dump(mode="json")
    except ValueError as exc:
        raise DataError(str(exc), field="output") from None


def _progress(samples: Iterator[PlainSample], console: Console) -> Iterator[PlainSample]:
    from agentworld.report_style import progress

    with progress(console, transient=True) as bar:
        task = bar.add_task("samples", total=None)
        for sample in samples:
            bar.advance(task)
            yield sample


def run_pipeline(config: PipelineConfig, *, progress: bool = True,
                 console: Console | None = None) -> PipelineReport:
    """Run the whole chain, write the output and ``stats.json``, print the per-step table."""
    console = console or Console(stderr=True)
    start = time.monotonic()
    counters: list[StepCounter] = []
    reports: list[IngestReport] = []
    dataset = DatasetTally()
    samples = map(dataset.add, plain_samples(config, counters=counters, reports=reports))
    output = _write_output(_progress(samples, console) if progress else samples, config.output)
    ingested = sum(r.trajectories for r in reports)
    skipped = sum(r.skipped for r in reports)
    steps = [StepStats(step="ingest", inputs=ingested + skipped, outputs=ingested, dropped=skipped),
             *(c.stats() for c in counters)]
    report = PipelineReport(steps=steps, ingest=reports, dataset=dataset.stats(), output=output,
                            elapsed_s=round(time.monotonic() - start, 3))
    out = config.output.path
    stats_path = (out if out.is_dir() else out.parent) / "stats.json"
    atomic_write_text(stats_path, report.model_dump_json(indent=2) + "\n")
    stats_path.chmod(0o644)
    console.print(steps_table(steps))
    return report


def steps_table(steps: list[StepStats]) -> Table:
    """The per-step accounting as a rich table."""
    table = Table(title="pipeline steps")
    for column in ("step", "in", "out", "dropped", "details"):
        table.add_column(column, justify="right" if column in ("in", "out", "dropped") else "left")
    for s in steps:
        details = ", ".join(f"{k}={v}" for k, v in s.details.items())
        table.add_row(s.step, str(s.inputs), str(s.outputs), str(s.dropped), details)
    return table

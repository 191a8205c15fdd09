"""``agentworld data``: convert logs to the unified schema, run the pipeline, look at a dataset, export.

Each command is generated from its config class below and is a thin wrapper: the work happens in
:mod:`agentworld.data.ingest`, :mod:`agentworld.data.pipeline`, :mod:`agentworld.data.process`
and :mod:`agentworld.data.export`, imported when the command runs. Data errors are
:class:`~agentworld.errors.DataError` (file:line, sample, field): one red line, exit code 2.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentworld.cli_support import cli_flags, command_label, config_command, new_app
from agentworld.errors import DataError

if TYPE_CHECKING:
    from rich.console import Console

    from agentworld.data.pipeline import PipelineConfig
    from agentworld.data.types import TrainSample

app = new_app("Training data: convert logs, clean/expand/mask/split them, inspect datasets, export them.")

ExportFormat = Literal["trl", "llama-factory", "ms-swift", "hf-datasets", "agentworld-bench", "samples"]
_IN = cli_flags("--data", old=("--in",))


class _Options(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ConvertOptions(_Options):
    """Convert one input file into unified trajectory JSONL (one trajectory per row)."""

    inp: Path = Field(description="Input file (JSONL, or a JSON array of chat logs).", json_schema_extra=_IN)
    out: Path = Field(description="Unified trajectory JSONL to write (replaced atomically).",
                      json_schema_extra={"output": "file"})
    format: str = Field("auto", description="Input format: auto (detected), or a registered converter: "
                        "agentworld-bench, recording, openai-chat, generic, unified.")
    on_error: Literal["raise", "skip"] = Field("raise", description="raise: stop at the first bad record; "
                                               "skip: report it with file and line, count it and go on.")


class ProcessOptions(_Options):
    """Run the pipeline of a config: inputs, steps, output, and stats.json beside the output."""

    config: Path = Field(description="Pipeline config (YAML or JSON).")
    progress: bool = Field(True, description="Show a progress line (off when not a terminal).")
    processes: int = Field(1, ge=1, description="Worker processes on this machine (output identical to one "
                           "process).", json_schema_extra=cli_flags("--processes", "-j"))
    ray: str | None = Field(None, description="Run on Ray Data: 'local' or a cluster address ('auto', "
                            "'ray://host:10001'); needs the ray extra.")


class StatsOptions(_Options):
    """Counts per domain, mask-category shares and action/observation length histograms."""

    inp: Path = Field(description="Samples, unified trajectories or any ingestable file.",
                      json_schema_extra=_IN)
    format: str = Field("auto", description="auto, samples, or an ingest format.")
    json_output: bool = Field(False, description="Print the statistics as JSON.",
                              json_schema_extra=cli_flags("--json"))
    report: Path | None = Field(None, description="Also write an HTML report to this file.",
                                json_schema_extra={**cli_flags("--out", old=("--report",)), "output": "file"})


class ExportOptions(_Options):
    """Export samples for SFT (TRL, LLaMA-Factory, ms-swift, HF datasets) or as AgentWorldBench rows.

    The train side goes to --out and the eval side (samples the pipeline's split marked eval) to
    --eval-out; give the pipeline's train and eval files both as --data to export both sides.
    """

    inp: list[Path] = Field(min_length=1, description="TrainSample JSONL (the pipeline's output; give "
                            "its train and eval files), unified trajectories or any ingestable "
                            "file (expanded, not masked).", json_schema_extra=_IN)
    format: ExportFormat = Field(description="Target format.")
    out: Path = Field(description="The train side's data file (a folder for hf-datasets, holding a "
                      "DatasetDict with train and test); replaced atomically.",
                      json_schema_extra={"output": "file"})
    eval_out: Path | None = Field(None, description="The eval side's data file (default beside --out: "
                                  "train.jsonl -> eval.jsonl, x.jsonl -> x_eval.jsonl; not for hf-datasets).",
                                  json_schema_extra={"output": "file"})
    tokenizer: Path | None = Field(None, description="trl/hf-datasets: a local tokenizer folder (never "
                                   "downloaded); rows become pre-tokenized input_ids + labels.")
    keep_masked: bool = Field(False, description="Keep masked-out samples, flagged so they train nothing.")
    style: Literal["sharegpt", "openai"] = Field("sharegpt", description="llama-factory: message style.")
    dataset_name: str | None = Field(None, description="llama-factory: the train side's entry in "
                                     "dataset_info.json (default: the file's stem); the eval side's is "
                                     "NAME_eval.")
    assistant_masks: bool = Field(False, description="trl with --tokenizer: also write assistant_masks.")

    def derived_outputs(self, field: str) -> list[Path]:
        """The eval side written beside --out when --eval-out is not given (claimed with it)."""
        from agentworld.data.sides import eval_path_for

        keep = field == "out" and self.eval_out is None and self.format != "hf-datasets"
        return [eval_path_for(self.out)] if keep else []

    def folder_output(self, field: str) -> bool:
        """An hf-datasets export is a folder: the guard asks for its mark (a digest of the tree), not
        for a ``dataset_dict.json`` that any saved dataset holds."""
        return field == "out" and self.format == "hf-datasets"


def _console() -> Console:
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True, highlight=False)


def _convert(options: ConvertOptions) -> None:
    from agentworld.data.ingest import IngestReport, ingest
    from agentworld.data.pipeline import write_jsonl_stream

    report = IngestReport()
    trajs = ingest(options.inp, options.format, on_error=options.on_error, report=report)
    n = write_jsonl_stream(options.out, (t.model_dump(mode="json") for t in trajs))
    console = _console()
    skipped = f"; skipped {report.skipped}" if report.skipped else ""
    console.print(f"wrote {n} trajectories to {options.out}{skipped}")
    for issue in report.issues[:10]:
        where = f"{issue.file}:{issue.line}" if issue.line is not None else issue.file
        console.print(f"  skipped {where}: {issue.reason}")


def _process(options: ProcessOptions) -> None:
    from agentworld.data.pipeline import PipelineConfig, run_pipeline

    console = _console()
    loaded = PipelineConfig.load(options.config)
    _claim_outputs(loaded, options.config)
    if options.ray is not None:
        from agentworld.data.scale_ray import run_ray

        report = run_ray(loaded, None if options.ray == "local" else options.ray, console=console)
    elif options.processes > 1:
        from agentworld.data.scale import run_parallel

        report = run_parallel(loaded, options.processes, console=console)
    else:
        report = run_pipeline(loaded, progress=options.progress, console=console)
    console.print(written(report.output))


def _claim_outputs(loaded: PipelineConfig, source: Path) -> None:
    """The output guard for what the pipeline config's ``output`` names: the train side, the eval side
    and ``stats.json`` (inside the folder for hf-datasets), before any sample is read."""
    from agentworld.data.sides import eval_path_for
    from agentworld.outputs import claim_file

    spec, folder = loaded.output, loaded.output.format == "hf-datasets"
    beside = [] if folder else [spec.eval_path or eval_path_for(spec.path), spec.path.parent / "stats.json"]
    for path in [spec.path, *beside]:
        claim_file(path, flag=f"output (in {source})", command=command_label(), folder_ok=folder)


def written(output: dict[str, Any]) -> str:
    """One line saying how many rows went to each side, and where."""
    held = output.get("eval_out")
    if held is None:  # hf-datasets: one folder, two splits
        return (f"wrote {output.get('rows', 0)} train and {output.get('eval_rows', 0)} test rows to "
                f"{output.get('out')}")
    return (f"wrote {output.get('rows', 0)} train rows to {output.get('out')} and "
            f"{output.get('eval_rows', 0)} eval rows to {held}")


def _samples(path: Path, fmt: str) -> Iterator[TrainSample]:
    """TrainSample JSONL as is; anything ingest reads, expanded and classified with the default mask."""
    from agentworld.data.ingest import ingest, records
    from agentworld.data.masking import mask
    from agentworld.data.process import expand
    from agentworld.data.types import TrainSample

    first = next((rec for _, _, rec in records(path)), None) if path.is_file() else None
    is_samples = isinstance(first, dict) and {"trajectory_id", "observation"} <= first.keys()
    if fmt in ("auto", "samples") and is_samples and isinstance(first, dict):
        rows = (TrainSample.model_validate(rec) for _, _, rec in records(path))
        yield from rows if first.get("mask") else mask(rows)
        return
    yield from mask(expand(ingest(path, fmt)))


def _stats(options: StatsOptions) -> None:
    import typer
    from rich.console import Console

    from agentworld.data.process import DatasetStats
    from agentworld.data.stats_render import print_stats, stats_html
    from agentworld.io import atomic_write_text

    data = DatasetStats()
    for sample in _samples(options.inp, options.format):
        data.add(sample)
    if options.json_output:
        typer.echo(data.model_dump_json(indent=2))
    else:
        print_stats(data, Console())
    if options.report is not None:
        atomic_write_text(options.report, stats_html(data, title=str(options.inp)))
        options.report.chmod(0o644)
        _console().print(f"wrote {options.report}")


def _export(options: ExportOptions) -> None:
    from agentworld.data.export import export, read_samples

    extra: dict[str, Any] = {"assistant_masks": True} if options.assistant_masks else {}
    if options.format == "llama-factory":
        extra.update(style=options.style, **({"dataset_name": options.dataset_name} if options.dataset_name
                                            else {}))
    tokenizer = str(options.tokenizer) if options.tokenizer is not None else None
    samples = (s for path in options.inp for s in read_samples(path))
    try:
        report = export(samples, options.format, options.out, eval_out=options.eval_out, tokenizer=tokenizer,
                        keep_masked=options.keep_masked, **extra)
    except (ValueError, OSError) as err:  # a bad option, an unloadable tokenizer, an unwritable path
        raise DataError(str(err)) from None
    console = _console()
    masked = (f"; masked samples: {report.masked_dropped} dropped, {report.masked_kept} kept"
              if report.masked_dropped or report.masked_kept else "")
    console.print(f"{report.format}: {report.samples} samples ({report.eval_samples} eval) → "
                  f"{report.rows} train + {report.eval_rows} eval rows{masked}")
    console.print(written(report.model_dump()))
    for path in report.files:
        console.print(f"wrote {path}")


config_command(app, ConvertOptions, _convert, name="convert")
config_command(app, ProcessOptions, _process, name="process")
config_command(app, StatsOptions, _stats, name="stats")
config_command(app, ExportOptions, _export, name="export")

"""``agentworld data``: convert logs to the unified schema, run the pipeline, look at a dataset.

Each command is a thin wrapper: the work happens in :mod:`agentworld.data.ingest`,
:mod:`agentworld.data.pipeline` and :mod:`agentworld.data.process`. Data errors print one located
line (file:line, sample, field) and exit with status 1. More commands are appended to ``app``.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from agentworld.cli_support import new_app
from agentworld.data.ingest import IngestReport, formats, ingest, records
from agentworld.data.masking import mask
from agentworld.data.pipeline import PipelineConfig, run_pipeline, write_jsonl_stream
from agentworld.data.process import DatasetStats, Histogram, expand
from agentworld.data.types import MASK_CATEGORIES, TrainSample
from agentworld.errors import DataError
from agentworld.io import atomic_write_text

app = new_app("Training data: convert logs, clean/expand/mask/split them, inspect datasets.")
console = Console(stderr=True, soft_wrap=True)


def _fail(err: DataError) -> typer.Exit:
    console.print(f"[red]error:[/red] {err}", highlight=False)
    return typer.Exit(1)


@app.command()
def convert(
    inp: Path = typer.Option(..., "--in", help="Input file (JSONL, or a JSON array of chat logs)."),
    out: Path = typer.Option(..., "--out", help="Unified trajectory JSONL to write (replaced atomically)."),
    fmt: str = typer.Option("auto", "--format", help="auto, or one of the registered formats."),
    on_error: str = typer.Option("raise", "--on-error", help="raise: stop at the first bad record; "
                                 "skip: log it, count it and go on."),
) -> None:
    """Convert one input file into unified Trajectory JSONL (``Trajectory.model_dump`` rows)."""
    if on_error not in ("raise", "skip"):
        raise _fail(DataError(f"--on-error must be raise or skip, not {on_error!r}"))
    report = IngestReport()
    try:
        trajs = ingest(inp, fmt, on_error="skip" if on_error == "skip" else "raise", report=report)
        n = write_jsonl_stream(out, (t.model_dump(mode="json") for t in trajs))
    except DataError as err:
        raise _fail(err) from None
    skipped = f"; skipped {report.skipped}" if report.skipped else ""
    console.print(f"wrote {n} trajectories to {out}{skipped}")
    for issue in report.issues[:10]:
        where = f"{issue.file}:{issue.line}" if issue.line is not None else issue.file
        console.print(f"  skipped {where}: {issue.reason}", highlight=False)


convert.__doc__ = f"{convert.__doc__}\n\nFormats: auto, {', '.join(formats())}."


@app.command()
def process(config: Path = typer.Option(..., "--config", help="Pipeline config (YAML or JSON)."),
            progress: bool = typer.Option(True, help="Show a progress line."),
            processes: int = typer.Option(1, "--processes", "-j", help="Worker processes on this machine "
                                          "(output identical to one process)."),
            ray: str | None = typer.Option(None, "--ray", help="Run on Ray Data: 'local' or a cluster "
                                           "address ('auto', 'ray://host:10001'); needs agentworld[ray]."),
            ) -> None:
    """Run the pipeline of a config: inputs → steps → output, plus stats.json beside the output."""
    try:
        loaded = PipelineConfig.load(config)
        if ray is not None:
            from agentworld.data.scale_ray import run_ray

            report = run_ray(loaded, None if ray == "local" else ray, console=console)
        elif processes > 1:
            from agentworld.data.scale import run_parallel

            report = run_parallel(loaded, processes, console=console)
        else:
            report = run_pipeline(loaded, progress=progress, console=console)
    except DataError as err:
        raise _fail(err) from None
    rows = report.output.get("rows", report.dataset.samples)
    console.print(f"wrote {rows} rows to {report.output.get('out')}")


def _samples(path: Path, fmt: str) -> Iterator[TrainSample]:
    """TrainSample JSONL as is; anything ingest reads, expanded and classified with the default mask."""
    first = next((rec for _, _, rec in records(path)), None) if path.is_file() else None
    is_samples = isinstance(first, dict) and {"trajectory_id", "observation"} <= first.keys()
    if fmt in ("auto", "samples") and is_samples and isinstance(first, dict):
        rows = (TrainSample.model_validate(rec) for _, _, rec in records(path))
        yield from rows if first.get("mask") else mask(rows)
        return
    yield from mask(expand(ingest(path, fmt)))


@app.command()
def stats(
    inp: Path = typer.Option(..., "--in", help="Samples, unified trajectories or any ingestable file."),
    fmt: str = typer.Option("auto", "--format", help="auto, samples, or an ingest format."),
    as_json: bool = typer.Option(False, "--json", help="Print the statistics as JSON."),
    report: Path | None = typer.Option(None, "--report", help="Also write an HTML report here."),
) -> None:
    """Counts per domain, mask-category shares and action/observation length histograms."""
    data = DatasetStats()
    try:
        for sample in _samples(inp, fmt):
            data.add(sample)
    except DataError as err:
        raise _fail(err) from None
    if as_json:
        typer.echo(data.model_dump_json(indent=2))
    else:
        _print_stats(data, Console())
    if report is not None:
        atomic_write_text(report, stats_html(data, title=str(inp)))
        report.chmod(0o644)
        console.print(f"wrote {report}")


# -- rendering ---------------------------------------------------------------------------------------

def _label(hist: Histogram, i: int) -> str:
    hi = hist.edges[i + 1] - 1 if i + 1 < len(hist.edges) else None
    lo = hist.edges[i]
    return f"{lo}+" if hi is None else (str(lo) if hi == lo else f"{lo}-{hi}")


def text_histogram(hist: Histogram, width: int = 40) -> list[str]:
    """One line per non-empty bin: range, bar, count."""
    peak = max(hist.counts) or 1
    lines = []
    for i, count in enumerate(hist.counts):
        if count:
            bar = "█" * max(1, round(width * count / peak))
            lines.append(f"{_label(hist, i):>11} │{bar:<{width}} {count}")
    return lines


def _print_stats(data: DatasetStats, out: Console) -> None:
    out.print(f"{data.samples} samples from {data.trajectories} trajectories")
    table = Table("domain", "samples")
    for domain, n in sorted(data.domains.items()):
        table.add_row(domain, str(n))
    out.print(table)
    if data.categories:
        cats = Table("category", "share", "samples", "kept")
        for cat, share in data.shares().items():
            cats.add_row(cat, f"{share:.1%}", str(data.categories.get(cat, 0)), str(data.kept.get(cat, 0)))
        out.print(cats)
    for name, hist in (("action tokens", data.action_tokens),
                       ("observation tokens", data.observation_tokens)):
        mean = hist.total / data.samples if data.samples else 0.0
        out.print(f"{name} (mean {mean:.1f}, max {hist.max})", highlight=False)
        for line in text_histogram(hist):
            out.print(line, highlight=False)


def svg_histogram(hist: Histogram, title: str, width: int = 560, height: int = 180) -> str:
    """An inline SVG bar chart of the histogram (bins with data and those between them)."""
    used = [i for i, c in enumerate(hist.counts) if c] or [0]
    bins = list(range(used[0], used[-1] + 1))
    peak = max(hist.counts) or 1
    bar_w = (width - 40) / len(bins)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 40}" role="img">',
             f'<title>{html.escape(title)}</title>']
    for k, i in enumerate(bins):
        h = (height - 20) * hist.counts[i] / peak
        x, y = 30 + k * bar_w, height - h
        parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" fill="#4a7ab5">'
                     f'<title>{_label(hist, i)}: {hist.counts[i]}</title></rect>')
        parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{height + 14}" font-size="10" text-anchor="middle">'
                     f'{_label(hist, i)}</text>')
        if hist.counts[i]:
            parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{y - 3:.1f}" font-size="10" '
                         f'text-anchor="middle">{hist.counts[i]}</text>')
    parts.append("</svg>")
    return "".join(parts)


def stats_html(data: DatasetStats, title: str = "dataset") -> str:
    """A self-contained HTML page: domain counts, category shares, two inline-SVG histograms."""
    rows = "".join(f"<tr><td>{html.escape(d)}</td><td>{n}</td></tr>" for d, n in sorted(data.domains.items()))
    cats = "".join(f"<tr><td>{c}</td><td>{s:.1%}</td><td>{data.categories.get(c, 0)}</td>"
                   f"<td>{data.kept.get(c, 0)}</td></tr>" for c, s in data.shares().items()
                   if c in MASK_CATEGORIES)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:2px 8px}</style></head><body>"
            f"<h1>{html.escape(title)}</h1>"
            f"<p>{data.samples} samples from {data.trajectories} trajectories</p>"
            f"<h2>Domains</h2><table><tr><th>domain</th><th>samples</th></tr>{rows}</table>"
            f"<h2>Mask categories</h2><table><tr><th>category</th><th>share</th><th>samples</th>"
            f"<th>kept</th></tr>{cats}</table>"
            f"<h2>Action tokens</h2>{svg_histogram(data.action_tokens, 'action tokens')}"
            f"<h2>Observation tokens</h2>{svg_histogram(data.observation_tokens, 'observation tokens')}"
            "</body></html>\n")


@app.command("export")
def export_command(
    inp: Path = typer.Option(..., "--in", help="TrainSample JSONL (the pipeline's output), unified "
                             "trajectories or any ingestable file (expanded, not masked)."),
    fmt: str = typer.Option(..., "--format",
                            help="trl, llama-factory, ms-swift, hf-datasets or agentworld-bench."),
    out: Path = typer.Option(..., "--out",
                             help="The data file (a folder for hf-datasets); replaced atomically."),
    tokenizer: str | None = typer.Option(None, "--tokenizer", help="trl/hf-datasets: a local tokenizer "
                                         "folder (never downloaded) → pre-tokenized input_ids + labels."),
    keep_masked: bool = typer.Option(False, "--keep-masked",
                                     help="Keep masked-out samples, flagged so they train nothing."),
    style: str = typer.Option("sharegpt", "--style", help="llama-factory: sharegpt or openai."),
    dataset_name: str | None = typer.Option(None, "--dataset-name", help="llama-factory: the entry in "
                                            "dataset_info.json (default: the file's stem)."),
    assistant_masks: bool = typer.Option(False, "--assistant-masks",
                                         help="trl with --tokenizer: also write assistant_masks."),
) -> None:
    """Export samples for SFT (TRL, LLaMA-Factory, ms-swift, HF datasets) or as AgentWorldBench rows."""
    from typing import Any

    from agentworld.data.export import export, read_samples

    options: dict[str, Any] = {"assistant_masks": True} if assistant_masks else {}
    if fmt == "llama-factory":
        options.update(style=style, **({"dataset_name": dataset_name} if dataset_name else {}))
    try:
        report = export(read_samples(inp), fmt, out, tokenizer=tokenizer, keep_masked=keep_masked, **options)
    except DataError as err:
        raise _fail(err) from None
    except (ValueError, OSError) as err:  # a bad option, an unloadable tokenizer, an unwritable path
        raise _fail(DataError(str(err))) from None
    masked = (f"; masked samples: {report.masked_dropped} dropped, {report.masked_kept} kept"
              if report.masked_dropped or report.masked_kept else "")
    console.print(f"{report.format}: {report.samples} samples → {report.rows} rows{masked}", highlight=False)
    for path in report.files:
        console.print(f"wrote {path}", highlight=False)

"""``agentworld eval probes``: verify a world model by rules, resumably and concurrently.

Each domain's plugin generates its probes from a seed (:mod:`agentworld.domains.probes`); every probe
is one world-model request whose predicted observation gets a deterministic verdict. Predictions go
to an append-only journal in the run folder and every request goes through the response cache, as
in ``eval run`` (:mod:`agentworld.eval.runner`): a run killed at any moment resumes without sending
a completed probe again. The verdicts are recomputed from the journal at the end (they are cheap and
deterministic), so the report always matches the predictions on disk.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentworld.domains.base import plugins, resolve
from agentworld.domains.probes import Probe, probe_row, verdict
from agentworld.domains.registry import load_domains
from agentworld.errors import AgentWorldError, ConfigMismatchError, DataError
from agentworld.eval.config import align_pool, diff_sections
from agentworld.eval.infer import make_backend, predict
from agentworld.eval.probes.config import ProbeResult, ProbesConfig
from agentworld.eval.records import PredictionRow
from agentworld.eval.runfolder import read_records, stored_config
from agentworld.io import AsyncJournal, atomic_write_jsonl, atomic_write_text, dumps
from agentworld.models.base import ChatBackend, ChatRequest
from agentworld.models.cache import ResponseCache
from agentworld.models.pool import write_endpoint_stats
from agentworld.outputs import is_empty
from agentworld.redact import redact_url
from agentworld.schema import BenchSample, parse_row

RUN_FORMAT = "agentworld-eval-probes/1"
CONFIG_NAME = "config.json"


def generate_probes(seed: int, variants: int, domains: list[str] | None = None) -> list[Probe]:
    """Every probe of the seed, for ``domains`` (default: every domain whose plugin has probes).

    Raises:
        DataError: a named domain that is unknown or has no probe generator.
    """
    found = {name: p for name, p in plugins().items() if p.probes}
    wanted = domains or sorted(found)
    missing = [d for d in wanted if d not in found]
    if missing:
        raise DataError(f"no probes for domain(s) {', '.join(missing)}; domains with probes: "
                        f"{', '.join(sorted(found))}", field="domains")
    probes: list[Probe] = []
    for name in wanted:
        reference = found[name].probes
        assert reference is not None
        probes += resolve(reference)(seed, variants)
    return probes


def probe_samples(probes: list[Probe]) -> list[BenchSample]:
    """The probes as AgentWorldBench samples (the rows the mock server loads)."""
    return [parse_row(probe_row(p), known_domains=None) for p in probes]


def write_data(probes: list[Probe], path: Path) -> int:
    """Write the probes as an AgentWorldBench JSONL file (atomically); returns the number of rows."""
    return atomic_write_jsonl(path, [probe_row(p) for p in probes])


def check_data_target(probes: list[Probe], path: Path) -> None:
    """Refuse to replace a user's file: ``--data-out`` may only create a file or rewrite one that
    already holds exactly these probes (a repeated command).

    Raises:
        AgentWorldError: the path is a folder, or a file with other content (left as it was).
    """
    if path.is_dir():
        raise AgentWorldError(f"--data-out {path}: is a folder; give a file name")
    if path.exists():
        lines = [dumps(probe_row(p)) for p in probes]
        try:
            same = path.read_text("utf-8").split("\n") == [*lines, ""]  # not splitlines: U+2028 in a row
        except (OSError, UnicodeDecodeError):
            same = False
        if not same:
            raise AgentWorldError(f"--data-out {path}: exists and holds something else; nothing was "
                                  "changed. Remove it or give another file name")


def _stored(config: ProbesConfig, probes: list[Probe]) -> dict[str, Any]:
    digest = hashlib.sha256(dumps([probe_row(p) for p in probes]).encode()).hexdigest()
    return {"model": config.model, "model_base_url": redact_url(config.model_base_url or "") or None,
            "seed": config.seed, "variants": config.variants, "domains": sorted({p.domain for p in probes}),
            "model_corpus": [str(path.resolve()) for path in config.model_corpus],
            "max_tokens": config.max_tokens, "temperature": config.temperature, "probes_sha256": digest}


def open_folder(out: Path, current: dict[str, Any]) -> None:
    """Refuse a folder that is neither new, empty, nor a probes run with the same settings.

    Raises:
        AgentWorldError: ``out`` is a file or a foreign non-empty folder (left as it was).
        ConfigMismatchError: the run was written with other settings (naming each field).
    """
    if not out.exists():
        return
    if not out.is_dir():
        raise AgentWorldError(f"{out}: exists and is not a folder; give a new or empty folder as --out")
    if is_empty(out):
        return
    stored = stored_config(out)
    if not isinstance(stored, dict) or stored.get("format") != RUN_FORMAT:
        raise AgentWorldError(f"{out}: not empty and not an 'agentworld eval probes' run; nothing was "
                              "changed. Give a new or empty folder as --out")
    changes = "; ".join(diff_sections(align_pool(stored.get("probes") or {}, current), current))
    if changes:
        raise ConfigMismatchError(f"{out}/{CONFIG_NAME} was written with other settings ({changes}); use "
                                  "another --out folder, or restore the original settings")


def predictions(path: Path) -> dict[str, PredictionRow]:
    """The journal's predictions by id (the last row of an id wins; a torn last line is skipped).

    Raises:
        DataError: a row that is not a prediction (file, line, probe id and field named).
    """
    return read_records(path, PredictionRow)


def judge(probes: list[Probe], preds: dict[str, PredictionRow]) -> list[ProbeResult]:
    """The verdict on every probe; one without a prediction, or with a failed request, fails."""
    out = []
    for p in probes:
        pred = preds.get(p.id)
        base = {"id": p.id, "domain": p.domain, "category": p.category, "name": p.name, "gap": p.gap}
        if pred is None or pred.error:
            out.append(ProbeResult(**base, passed=False, error=pred.error if pred else "no prediction"))
            continue
        v = verdict(p.checks, pred.prediction)
        out.append(ProbeResult(**base, passed=v.passed, failed_checks=list(v.failed)))
    return out


class ProbeRun:
    """Sends every probe without a stored prediction (``concurrency`` at a time) and journals it."""

    def __init__(self, config: ProbesConfig, out: Path, backend: ChatBackend, owned: bool) -> None:
        self.config, self.out, self.backend, self.owned = config, out, backend, owned
        self.cache = ResponseCache(out / "cache.jsonl", config.cache)
        self.journal = AsyncJournal(out / "predictions.jsonl")
        self.domains = load_domains(None)
        self.sent = 0

    async def _one(self, sample: BenchSample, slots: asyncio.Semaphore,
                   advance: Callable[[str], None]) -> None:
        async with slots:
            request = ChatRequest(messages=tuple(sample.messages()), model=self.config.model or "",
                                  max_tokens=self.config.max_tokens, temperature=self.config.temperature)
            pred = await predict(sample, request, self.backend, self.cache, self.domains)
            self.sent += 1
            await self.journal.write(pred.model_dump(mode="json"))
        advance("predict")

    async def run(self, samples: list[BenchSample], done: dict[str, PredictionRow]) -> None:
        todo = [s for s in samples if s.id not in done or done[s.id].error]
        slots = asyncio.Semaphore(self.config.concurrency)
        with _progress(self.config.progress, len(samples)) as advance:
            for _ in range(len(samples) - len(todo)):
                advance("predict")
            try:
                async with asyncio.TaskGroup() as group:
                    for sample in todo:
                        group.create_task(self._one(sample, slots, advance))
            except BaseExceptionGroup as failed:
                raise failed.exceptions[0] from None
            finally:
                self.journal.close()
                self.cache.close()
                closer = getattr(self.backend, "aclose", None) if self.owned else None
                if closer is not None:
                    await closer()
                if self.config.out is not None:
                    write_endpoint_stats(self.backend, self.config.out / "endpoints.json")


class _Quiet:
    def __enter__(self) -> Callable[[str], None]:
        return lambda _stage: None

    def __exit__(self, *exc: object) -> None:
        return None


def _progress(enabled: bool, total: int) -> Any:
    """A progress bar on a terminal (as ``eval run``); otherwise nothing, not even rich is imported."""
    if not (enabled and sys.stderr.isatty()):
        return _Quiet()
    from agentworld.report_style import StageProgress

    return StageProgress(True, total, ("predict",))


def _backend(config: ProbesConfig, domains: list[str]) -> ChatBackend:
    return make_backend(config.model_endpoint(), config, domains=domains)


def run_probes(config: ProbesConfig, *, backend: ChatBackend | None = None) -> dict[str, Any] | None:
    """Generate, (re)send what is missing, judge and write the report; returns ``report.json``'s content
    (None when only ``--data-out`` was asked for)."""
    from agentworld.eval.probes.report import summarize, write_html

    probes = generate_probes(config.seed, config.variants, config.domains)
    if config.write_data is not None:
        check_data_target(probes, config.write_data)
    if config.out is None:
        if config.write_data is None:
            raise AgentWorldError("give --out DIR (a run) or --data-out FILE (the probes as data), or both")
        write_data(probes, config.write_data)
        return None
    if config.model is None and backend is None:
        raise AgentWorldError("--model is required for a run (a served model's name with --model-base-url, "
                              "or a backend name such as retrieval)")
    out = config.out
    stored = _stored(config, probes)
    open_folder(out, stored)
    owned = backend is None
    if backend is None:
        backend = _backend(config, stored["domains"])
    if config.write_data is not None:
        write_data(probes, config.write_data)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / CONFIG_NAME, dumps({"format": RUN_FORMAT, "probes": stored}) + "\n")
    write_data(probes, out / "probes.jsonl")
    runner = ProbeRun(config, out, backend, owned)
    asyncio.run(runner.run(probe_samples(probes), predictions(out / "predictions.jsonl")))
    results = judge(probes, predictions(out / "predictions.jsonl"))
    report = summarize(results, stored, sent=runner.sent)
    atomic_write_jsonl(out / "verdicts.jsonl", [r.model_dump(mode="json") for r in results])
    atomic_write_text(out / "report.json", dumps(report) + "\n")
    write_html(out, probes, results, report)
    return report


def probes_command(config: ProbesConfig) -> None:
    """``agentworld eval probes``: run, then the table on stdout (rich on a terminal, plain in a pipe)."""
    import typer

    from agentworld.eval.probes.report import render_rich, render_text

    report = run_probes(config)
    if config.write_data is not None:
        typer.echo(f"wrote {config.write_data}")
    if report is None or config.out is None:
        return
    if sys.stdout.isatty():
        render_rich(report)
    else:
        typer.echo(render_text(report))
    typer.echo(f"wrote {config.out / 'report.json'} and {config.out / 'report.html'}")

"""The resumable evaluation run: a pool of workers, each taking one sample through predict → rules → judge.

Results go to append-only journals in the run folder; a sample whose row is already there is
skipped, and every request goes through the response cache, so a run killed at any moment resumes
where it stopped without sending a completed request twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld.cli_support import StageProgress
from agentworld.domains.registry import DomainRegistry, load_domains
from agentworld.errors import DataError
from agentworld.eval.cache import AsyncJournal, ResponseCache
from agentworld.eval.config import (
    EvalConfig,
    InferFields,
    JudgeConfig,
    check_section,
    diff_sections,
    fingerprint_file,
    public_url,
    read_stored,
    resolved_sections,
    write_stored,
)
from agentworld.eval.infer import (
    PredictionRow,
    make_backend,
    model_request,
    predict,
    read_predictions,
    read_rows,
    select_samples,
)
from agentworld.eval.judge import (
    BACKEND_PREFIX,
    NO_GENERATION,
    JudgeSettings,
    judge_sample,
    reference_predictions,
)
from agentworld.eval.score import ScoreReport, score_run_rows
from agentworld.io import atomic_write_text, dumps, read_journal
from agentworld.models.base import ChatBackend
from agentworld.schema import BenchSample, discover_data

RuleFn = Callable[[str, str, str, BenchSample], Any]


def load_rules() -> RuleFn | None:
    """``agentworld.eval.rules.score_rules`` when that module is installed, else None."""
    try:
        module = importlib.import_module("agentworld.eval.rules")
    except ModuleNotFoundError as exc:
        if exc.name != "agentworld.eval.rules":
            raise
        return None
    fn: RuleFn | None = getattr(module, "score_rules", None)
    return fn


def needs_judging(row: dict[str, Any] | None, pred: PredictionRow) -> bool:
    """Judge again only what a resumed run can change: missing rows, backend errors, new generations."""
    if row is None:
        return True
    error = row.get("error") or ""
    return error.startswith(BACKEND_PREFIX) or (error == NO_GENERATION and bool(pred.raw))


@dataclass
class RunState:
    """Everything one run needs; built from a config by :func:`prepare`."""

    run_dir: Path
    samples: list[BenchSample]
    domains: DomainRegistry
    model: ChatBackend | None
    judge: ChatBackend | None
    settings: JudgeSettings | None
    config: EvalConfig
    rules: RuleFn | None = None
    reference: dict[str, str] = field(default_factory=dict)
    meta: dict[str, dict[str, Any]] = field(default_factory=dict)


class Runner:
    """Runs a :class:`RunState` to completion (or resumes it) and writes ``scores.json``."""

    def __init__(self, state: RunState) -> None:
        self.s = state
        d = state.run_dir
        self.preds = read_predictions(d / "predictions.jsonl")
        self.judged = read_rows(d / "judgments.jsonl")
        self.ruled = read_rows(d / "rules.jsonl")
        self.cache = ResponseCache(d / "cache.jsonl", state.config.cache)
        self.pred_log = AsyncJournal(d / "predictions.jsonl")
        self.judge_log = AsyncJournal(d / "judgments.jsonl")
        self.rule_log = AsyncJournal(d / "rules.jsonl")
        self._advance: Callable[[str], None] = lambda _: None

    async def _predict(self, sample: BenchSample) -> PredictionRow | None:
        pred = self.preds.get(sample.id)
        if self.s.model is not None and (pred is None or pred.error):
            cfg = self.s.config
            request = model_request(sample, cfg.model, cfg.max_tokens, cfg.temperature)
            pred = await predict(sample, request, self.s.model, self.cache, self.s.domains)
            await self.pred_log.write(pred.model_dump(mode="json"))
            self.preds[sample.id] = pred
        return pred

    async def _rules(self, sample: BenchSample, pred: PredictionRow) -> None:
        if self.s.rules is None or pred.error or sample.id in self.ruled:
            return
        score = self.s.rules(sample.domain, pred.prediction, sample.ground_truth, sample)
        row = {"id": sample.id, "domain": sample.domain, "rule": score.model_dump(mode="json")}
        await self.rule_log.write(row)
        self.ruled[sample.id] = row

    async def _judge(self, sample: BenchSample, pred: PredictionRow) -> None:
        if self.s.judge is None or self.s.settings is None:
            return
        if not needs_judging(self.judged.get(sample.id), pred):
            return
        row = await judge_sample(sample, pred.prediction, pred.raw, self.s.domains[sample.domain],
                                 self.s.settings, self.s.judge, self.cache, self.s.reference.get(sample.id))
        dumped = row.model_dump(mode="json")
        await self.judge_log.write(dumped)
        self.judged[sample.id] = dumped

    async def _process(self, sample: BenchSample) -> None:
        pred = await self._predict(sample)
        self._advance("predict")
        if pred is not None:
            await self._rules(sample, pred)
            await self._judge(sample, pred)
        self._advance("judge")

    async def _worker(self, queue: asyncio.Queue[BenchSample]) -> None:
        while not queue.empty():
            await self._process(queue.get_nowait())

    async def run(self) -> ScoreReport:
        """Process every sample with ``concurrency`` workers, then score and write ``scores.json``."""
        queue: asyncio.Queue[BenchSample] = asyncio.Queue()
        for sample in self.s.samples:
            queue.put_nowait(sample)
        workers = min(self.s.config.concurrency, max(len(self.s.samples), 1))
        stages = ("predict", "judge") if self.s.judge is not None else ("predict",)
        with StageProgress(self.s.config.progress, len(self.s.samples), stages) as advance:
            self._advance = advance
            try:
                await asyncio.gather(*(self._worker(queue) for _ in range(workers)))
            finally:
                self.close()
        return self.score()

    def score(self) -> ScoreReport:
        report = score_run_rows(self.s.run_dir, self.s.samples, self.s.meta)
        atomic_write_text(self.s.run_dir / "scores.json", dumps(report.to_json()) + "\n")
        return report

    def close(self) -> None:
        for journal in (self.pred_log, self.judge_log, self.rule_log):
            journal.close()
        self.cache.close()


def journal_ids(path: Path) -> list[str]:
    """Every id in a journal, duplicates included (for checks that each sample ends up exactly once)."""
    return [str(r["id"]) for r in read_journal(path) if isinstance(r, dict) and "id" in r]


# -- from a config to a run ----------------------------------------------------------------------


def _sections(config: EvalConfig, samples: list[BenchSample], domains: DomainRegistry) -> dict[str, Any]:
    used = sorted({s.domain for s in samples})
    prompts = "\0".join(domains[d].judge_system_prompt for d in used).encode()
    extras = {"infer.data_sha256": fingerprint_file(discover_data(config.data)),
              "judge.prompts_sha256": hashlib.sha256(prompts).hexdigest()}
    if config.judge_mode == "reference" and config.reference_run is not None:
        extras["judge.reference_sha256"] = fingerprint_file([config.reference_run / "predictions.jsonl"])
    return resolved_sections(config, extras)


def _settle_config(config: EvalConfig, sections: dict[str, Any], judging: bool, rejudge: bool) -> None:
    """Refuse a changed run (or archive old judgments when re-judging), then write ``config.json``."""
    out = config.out
    stored = read_stored(out) or {}
    check_section(out, stored.get("infer"), sections["infer"], "inference")
    old_judge = stored.get("judge")
    if not judging:
        sections["judge"] = old_judge
    elif old_judge and diff_sections(old_judge, sections["judge"]):
        if not rejudge:
            check_section(out, old_judge, sections["judge"], "judge")
        archive = out / f"judgments.{time.strftime('%Y%m%dT%H%M%S')}.jsonl"
        if (out / "judgments.jsonl").exists():
            (out / "judgments.jsonl").rename(archive)
            print(f"judge settings changed: previous judgments moved to {archive}", file=sys.stderr)
    write_stored(out, sections)


def prepare(config: EvalConfig, *, model: ChatBackend | None, judge: ChatBackend | None,
            predicting: bool = True, rejudge: bool = False) -> RunState:
    """Validate everything, check or write ``config.json`` and build the backends; no request is sent."""
    config = config.model_copy(update={"data": [p.resolve() for p in config.data]})
    samples = select_samples(config)
    domains = load_domains(config.prompts)
    judging = not config.no_judge and (judge is not None or config.judge_model is not None)
    reference = reference_predictions(config) if judging and config.judge_mode == "reference" else {}
    if predicting and model is None:
        model = make_backend(config.model, config.model_base_url, config.model_api_key, config)
    check_domains = getattr(model, "check_domains", None) if predicting else None
    if check_domains is not None:  # a backend that cannot answer a domain says so before any request
        check_domains(sorted({s.domain for s in samples}))
    if judging and judge is None:
        judge = make_backend(config.judge_model or "", config.judge_base_url, config.judge_api_key, config)
    sections = _sections(config, samples, domains)
    config.out.mkdir(parents=True, exist_ok=True)
    _settle_config(config, sections, judging, rejudge)
    settings = JudgeSettings(
        model=config.judge_model or (judge.name if judge else ""), mode=config.judge_mode,
        retries=config.judge_retries, max_tokens=config.judge_max_tokens,
        temperature=config.judge_temperature, seed=config.seed) if judging else None
    return RunState(run_dir=config.out, samples=samples, domains=domains, model=model if predicting else None,
                    judge=judge if judging else None, settings=settings, config=config,
                    rules=load_rules() if config.rules else None, reference=reference,
                    meta=_meta(sections))


def _meta(sections: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What produced the scores, for the report (URLs without credentials, never keys)."""
    judge = sections.get("judge") or {}
    infer = sections["infer"]
    return {"judge": {"model": judge.get("judge_model"), "base_url": public_url(judge.get("judge_base_url")),
                      "mode": judge.get("judge_mode"), "prompts_source": judge.get("prompts") or "builtin"},
            "model": {"name": infer["model"], "base_url": public_url(infer.get("model_base_url")),
                      "max_tokens": infer["max_tokens"], "temperature": infer["temperature"]}}


async def _run(state: RunState, owned: list[ChatBackend]) -> ScoreReport:
    try:
        return await Runner(state).run()
    finally:
        for backend in owned:
            closer = getattr(backend, "aclose", None)
            if closer is not None:
                await closer()


def run_eval(config: EvalConfig, *, model: ChatBackend | None = None,
             judge: ChatBackend | None = None) -> ScoreReport:
    """Infer, judge, rule tier and score (resuming ``config.out`` if it exists); returns the report."""
    state = prepare(config, model=model, judge=judge)
    owned = [b for b, given in ((state.model, model), (state.judge, judge))
             if b is not None and given is None]
    return asyncio.run(_run(state, owned))


def _stored_infer(run_dir: Path) -> dict[str, Any]:
    stored = read_stored(run_dir)
    if not stored:
        raise DataError("not a run folder (no config.json); run 'agentworld eval run' first",
                        path=str(run_dir))
    return {k: v for k, v in stored["infer"].items() if k in InferFields.model_fields}


def run_judge(config: JudgeConfig, *, judge: ChatBackend | None = None) -> ScoreReport:
    """(Re-)judge the stored predictions of ``config.run``; the world model is never called."""
    judge_fields = {k: v for k, v in dict(config).items() if k != "run"}
    full = EvalConfig(**_stored_infer(config.run), out=config.run, **judge_fields, no_judge=False)
    state = prepare(full, model=None, judge=judge, predicting=False, rejudge=True)
    return asyncio.run(_run(state, [state.judge] if judge is None and state.judge else []))


def score_run(run_dir: Path) -> ScoreReport:
    """Score a run folder from its journals (and write ``scores.json``)."""
    config = EvalConfig(**_stored_infer(run_dir), out=run_dir, no_judge=True)
    samples = select_samples(config)
    report = score_run_rows(run_dir, samples, _meta(read_stored(run_dir) or {}))
    atomic_write_text(run_dir / "scores.json", dumps(report.to_json()) + "\n")
    return report

"""The resumable evaluation run: every sample goes predict → rules → judge, the stages pipelined.

Each stage has its own pool of ``concurrency`` slots, so a sample is judged as soon as its own
prediction is in while the world model keeps working on the next ones: neither endpoint waits for
the other. Results go to append-only journals in the run folder; a sample whose row is already
there is skipped, and every request goes through the response cache, so a run killed at any moment
resumes where it stopped without sending a completed request twice.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentworld.eval.config import EvalConfig, InferFields, JudgeConfig
from agentworld.eval.infer import model_request, predict, select_samples
from agentworld.eval.judge import judge_sample
from agentworld.eval.prepare import RunState, load_rules, prepare, run_meta
from agentworld.eval.records import JudgmentRow, PredictionRow, RuleRow
from agentworld.eval.runfolder import RunFolder, require_run
from agentworld.eval.score import ScoreReport, score_run_rows
from agentworld.io import AsyncJournal, atomic_write_text, dumps, read_journal
from agentworld.models.base import ChatBackend
from agentworld.models.cache import ResponseCache
from agentworld.models.pool import write_endpoint_stats
from agentworld.schema import BenchSample

__all__ = ["RunState", "Runner", "journal_ids", "load_rules", "needs_judging", "prepare", "run_eval",
           "run_judge", "score_run"]


def needs_judging(row: JudgmentRow | None, pred: PredictionRow) -> bool:
    """Judge again only what a resumed run can change: missing rows, endpoint errors, new generations."""
    if row is None:
        return True
    return row.status == "api_error" or (row.status == "no_generation" and bool(pred.raw))


class Runner:
    """Runs a :class:`RunState` to completion (or resumes it) and writes ``scores.json``."""

    def __init__(self, state: RunState) -> None:
        self.s = state
        d = state.run_dir
        folder = RunFolder(d)
        self.preds = folder.predictions()
        self.judged = folder.judgments()
        self.ruled = folder.rules()
        self.cache = ResponseCache(d / "cache.jsonl", state.config.cache)
        self.pred_log = AsyncJournal(d / "predictions.jsonl")
        self.judge_log = AsyncJournal(d / "judgments.jsonl")
        self.rule_log = AsyncJournal(d / "rules.jsonl")
        self._advance: Callable[[str], None] = lambda _: None

    async def _predict(self, sample: BenchSample) -> PredictionRow | None:
        pred = self.preds.get(sample.id)
        if self.s.model is not None and (pred is None or pred.error):
            cfg = self.s.config
            request = model_request(sample, cfg.model, cfg.max_tokens, cfg.temperature, cfg.view())
            pred = await predict(sample, request, self.s.model, self.cache, self.s.domains)
            await self.pred_log.write(pred.model_dump(mode="json"))
            self.preds[sample.id] = pred
        return pred

    async def _rules(self, sample: BenchSample, pred: PredictionRow) -> None:
        if self.s.rules is None or pred.error or sample.id in self.ruled:
            return
        score = self.s.rules(sample.domain, pred.prediction, sample.ground_truth, sample)
        row = RuleRow(id=sample.id, domain=sample.domain, rule=score.model_dump(mode="json"))
        await self.rule_log.write(row.model_dump(mode="json"))
        self.ruled[sample.id] = row

    async def _judge(self, sample: BenchSample, pred: PredictionRow) -> None:
        if self.s.judge is None or self.s.settings is None:
            return
        if not needs_judging(self.judged.get(sample.id), pred):
            return
        row = await judge_sample(sample, pred.prediction, pred.raw, self.s.domains[sample.domain],
                                 self.s.settings, self.s.judge, self.cache, self.s.reference.get(sample.id))
        await self.judge_log.write(row.model_dump(mode="json"))
        self.judged[sample.id] = row

    async def _process(self, sample: BenchSample, predicting: asyncio.Semaphore,
                       judging: asyncio.Semaphore) -> None:
        async with predicting:
            pred = await self._predict(sample)
        self._advance("predict")
        if pred is not None:
            await self._rules(sample, pred)
            async with judging:
                await self._judge(sample, pred)
        self._advance("judge")

    async def run(self) -> ScoreReport:
        """Process every sample (``concurrency`` predictions and judgings at a time), then score and
        write ``scores.json``."""
        slots = self.s.config.concurrency
        predicting, judging = asyncio.Semaphore(slots), asyncio.Semaphore(slots)
        stages = ("predict", "judge") if self.s.judge is not None else ("predict",)
        with _progress(self.s.config.progress, len(self.s.samples), stages) as advance:
            self._advance = advance
            try:
                async with asyncio.TaskGroup() as group:
                    for sample in self.s.samples:
                        group.create_task(self._process(sample, predicting, judging))
            except BaseExceptionGroup as failed:
                raise failed.exceptions[0] from None
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


@contextmanager
def _progress(enabled: bool, total: int, stages: tuple[str, ...]) -> Iterator[Callable[[str], None]]:
    """A progress bar on a terminal; otherwise nothing at all (not even rich gets imported)."""
    if not (enabled and sys.stderr.isatty()):
        yield lambda _stage: None
        return
    from agentworld.report_style import StageProgress

    with StageProgress(True, total, stages) as advance:
        yield advance




async def _run(state: RunState, owned: list[ChatBackend]) -> ScoreReport:
    try:
        return await Runner(state).run()
    finally:
        if state.model is not None:
            write_endpoint_stats(state.model, state.run_dir / "endpoints.json")
        for backend in owned:
            closer = getattr(backend, "aclose", None)
            if closer is not None:
                await closer()


def run_eval(config: EvalConfig, *, model: ChatBackend | None = None,
             judge: ChatBackend | None = None) -> ScoreReport:
    """Infer, judge, rule tier and score (resuming ``config.out`` if it is a run); returns the report."""
    state = prepare(config, model=model, judge=judge)
    owned = [b for b, given in ((state.model, model), (state.judge, judge))
             if b is not None and given is None]
    return asyncio.run(_run(state, owned))


def _stored_infer(stored: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in (stored.get("infer") or {}).items() if k in InferFields.model_fields}


def run_judge(config: JudgeConfig, *, judge: ChatBackend | None = None) -> ScoreReport:
    """(Re-)judge the stored predictions of ``config.run``; the world model is never called."""
    stored = require_run(config.run)
    judge_fields = {k: v for k, v in dict(config).items() if k != "run"}
    full = EvalConfig(**_stored_infer(stored), out=config.run, **judge_fields, no_judge=False)
    state = prepare(full, model=None, judge=judge, predicting=False, rejudge=True)
    return asyncio.run(_run(state, [state.judge] if judge is None and state.judge else []))


def score_run(run_dir: Path) -> ScoreReport:
    """Score a run folder from its journals (and write ``scores.json``)."""
    stored = require_run(run_dir)
    config = EvalConfig(**_stored_infer(stored), out=run_dir, no_judge=True)
    samples = select_samples(config)
    report = score_run_rows(run_dir, samples, run_meta(stored))
    atomic_write_text(run_dir / "scores.json", dumps(report.to_json()) + "\n")
    return report

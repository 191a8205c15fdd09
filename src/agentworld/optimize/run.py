"""The propose–evaluate–refine loop of one domain, resumable from its journal and response cache.

Round r asks the optimizer for ``candidates`` revisions of the variant that scores best on the
training split, shown its worst training samples; each revision that parses becomes the next
variant and is scored on both splits. Training picks what to refine; validation alone decides the
reported winner, so a revision that fits the training samples without generalising is kept on
record but not reported.

Resuming: ``journal.jsonl`` holds every finished proposal (a variant or a failure) and every
error-free evaluation, so a restarted run replays them without a request; work that was cut off
mid-way is redone through the response cache (``cache.jsonl``), which answers every request that
had completed. Failed requests are not journalled: a resumed run asks again.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld.errors import AgentWorldError
from agentworld.eval.infer import BACKEND_ERRORS
from agentworld.io import JsonlJournal, read_journal
from agentworld.models.base import ChatBackend
from agentworld.models.cache import ResponseCache
from agentworld.optimize.evaluate import Evaluation, Scorer
from agentworld.optimize.proposal import ProposalError, optimizer_request, parse_revision
from agentworld.optimize.split import Split
from agentworld.optimize.store import (
    DomainSummary,
    Failure,
    Variant,
    VariantLine,
    best,
    write_variant,
)
from agentworld.redact import redact_text

REPLY_EXCERPT = 2000
"""Characters of a failed proposal's reply kept in the journal, to see what the optimizer wrote."""


@dataclass
class Journal:
    """The run's journal: finished proposals and evaluations, by key; new events appended."""

    path: Path
    variants: dict[tuple[str, int], Variant] = field(default_factory=dict)
    proposals: dict[tuple[str, int, int], dict[str, Any]] = field(default_factory=dict)
    evaluations: dict[tuple[str, int, str], Evaluation] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for row in read_journal(self.path) if self.path.exists() else []:
            if not isinstance(row, dict):
                continue
            event = row.get("event")
            if event == "variant":
                variant = Variant.model_validate(row["variant"])
                self.variants[(variant.domain, variant.version)] = variant
            if event in ("variant", "failed") and row.get("round"):
                self.proposals[(row["domain"], row["round"], row["candidate"])] = row
            if event == "evaluated":
                key = (row["domain"], row["version"], row["split"])
                self.evaluations[key] = Evaluation.model_validate(row["evaluation"])
        self._file = JsonlJournal(self.path)

    def append(self, row: dict[str, Any]) -> None:
        self._file.append(row)

    def close(self) -> None:
        self._file.close()


@dataclass
class Context:
    """What every domain's loop shares."""

    out: Path
    scorer: Scorer
    optimizer: ChatBackend
    cache: ResponseCache
    journal: Journal


class DomainRun:
    """The loop for one domain's split."""

    def __init__(self, ctx: Context, split: Split, shipped: str) -> None:
        self.ctx, self.split, self.c = ctx, split, ctx.scorer.config
        self.domain = split.domain
        self.by_id = {s.id: s for s in (*split.train, *split.val)}
        self.variants = [Variant(domain=self.domain, version=0, round=0, parent=None, prompt=shipped)]
        self.scores: dict[tuple[int, str], Evaluation] = {}
        self.failed: list[Failure] = []

    async def _evaluate(self, variant: Variant, split: str) -> Evaluation:
        key = (self.domain, variant.version, split)
        stored = self.ctx.journal.evaluations.get(key)
        if stored is None:
            samples = self.split.train if split == "train" else self.split.val
            stored = await self.ctx.scorer.evaluate(samples, variant.prompt)
            if samples and stored.errors == len(samples):
                first = next(s.error for s in stored.samples if s.error)
                raise AgentWorldError(f"{self.domain}: every world-model request failed, e.g. {first}; check "
                                      "--model-base-url and --model (the run resumes when started again)")
            if not stored.errors:
                self.ctx.journal.append({"event": "evaluated", "domain": self.domain,
                                         "version": variant.version, "split": split,
                                         "evaluation": stored.model_dump(mode="json")})
        self.scores[(variant.version, split)] = stored
        return stored

    async def _score(self, variants: list[Variant]) -> None:
        await asyncio.gather(*(self._evaluate(v, s) for v in variants for s in ("train", "val")))
        for v in variants:
            parent = self.variants[v.parent].prompt if v.parent is not None else None
            write_variant(self.ctx.out, v, parent, self.scores[(v.version, "train")],
                          self.scores[(v.version, "val")])

    async def _ask(self, rnd: int, candidate: int, parent: Variant) -> dict[str, Any] | str:
        """The stored outcome of a proposal, else the optimizer's reply text."""
        stored = self.ctx.journal.proposals.get((self.domain, rnd, candidate))
        if stored is not None:
            return stored
        worst = self.scores[(parent.version, "train")].worst(self.c.worst)
        request = optimizer_request(parent.prompt, worst, self.by_id, model=self.c.optimizer_model,
                                    budget=self.c.diff_chars, max_tokens=self.c.optimizer_max_tokens,
                                    temperature=self.c.optimizer_temperature, history=self._history(parent))
        attempt = (rnd - 1) * self.c.candidates + candidate
        result, _ = await self.ctx.cache.call(self.ctx.optimizer, request, attempt)
        return result.content

    def _history(self, current: Variant) -> tuple[str, ...]:
        """How each variant fared on training, and the failed proposals (shown to the optimizer)."""
        lines = []
        for v in self.variants:
            train = self.scores[(v.version, "train")].score
            origin = "the shipped prompt" if v.parent is None else f"revision of v{v.parent}"
            lines.append(f"- v{v.version} ({origin}): {train:.1f}{' <- current' if v is current else ''}")
        lines += [f"- round {f.round} proposal failed: {f.reason}" for f in self.failed if not f.retried]
        return tuple(lines)

    def _accept(self, rnd: int, candidate: int, parent: Variant,
                outcome: dict[str, Any] | str) -> Variant | None:
        if isinstance(outcome, dict):
            if outcome["event"] == "failed":
                self.failed.append(Failure(round=rnd, candidate=candidate, reason=outcome["reason"]))
                return None
            variant = Variant.model_validate(outcome["variant"])
            self.variants.append(variant)
            return variant
        event: dict[str, Any] = {"domain": self.domain, "round": rnd, "candidate": candidate}
        try:
            text = parse_revision(outcome, self.c.max_prompt_chars)
            same = next((v for v in self.variants if v.prompt.strip() == text.strip()), None)
            if same is not None:
                raise ProposalError(f"the revision is the same as v{same.version}")
        except ProposalError as exc:
            self.failed.append(Failure(round=rnd, candidate=candidate, reason=str(exc)))
            self.ctx.journal.append({"event": "failed", **event, "reason": str(exc),
                                     "reply": outcome[:REPLY_EXCERPT]})
            return None
        variant = Variant(domain=self.domain, version=len(self.variants), round=rnd, parent=parent.version,
                          prompt=text, candidate=candidate)
        self.variants.append(variant)
        self.ctx.journal.append({"event": "variant", **event, "variant": variant.model_dump(mode="json")})
        return variant

    async def _round(self, rnd: int) -> None:
        parent = self.variants[self.best("train")]
        asks = await asyncio.gather(*(self._ask(rnd, c, parent) for c in range(self.c.candidates)),
                                    return_exceptions=True)
        new = []
        for candidate, outcome in enumerate(asks):
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, BACKEND_ERRORS):
                    raise outcome
                reason = redact_text(f"optimizer request failed: {type(outcome).__name__}: {outcome}")
                self.failed.append(Failure(round=rnd, candidate=candidate, reason=reason, retried=True))
                continue
            variant = self._accept(rnd, candidate, parent, outcome)
            if variant is not None:
                new.append(variant)
        await self._score(new)

    def best(self, split: str) -> int:
        return best(self._lines(), split)

    def _lines(self) -> list[VariantLine]:
        lines = []
        for v in self.variants:
            train, val = self.scores.get((v.version, "train")), self.scores.get((v.version, "val"))
            lines.append(VariantLine(version=v.version, round=v.round, parent=v.parent,
                                     train=train.score if train else None, val=val.score if val else None,
                                     train_errors=train.errors if train else 0,
                                     val_errors=val.errors if val else 0))
        return lines

    def summary(self) -> DomainSummary:
        head = self.variants[0].prompt.rstrip()
        own = sum(1 for s in self.by_id.values() if not s.system_str.startswith(head))
        return DomainSummary(domain=self.domain, train_samples=len(self.split.train),
                             val_samples=len(self.split.val), rows_with_own_prompt=own,
                             winner=self.best("val"),
                             best_train=self.best("train"), variants=tuple(self._lines()),
                             failed=tuple(self.failed))

    async def run(self) -> DomainSummary:
        """v0 scored, then ``rounds`` rounds; returns the domain's summary."""
        await self._score(self.variants[:1])
        for rnd in range(1, self.c.rounds + 1):
            await self._round(rnd)
        return self.summary()

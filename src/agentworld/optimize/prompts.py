"""``optimize prompts`` end to end: every check, then the output folder, then each domain's loop.

Nothing is written before the data, the settings and the endpoints have been checked: a bad
option, bad data, an unknown backend or a folder that is not an optimisation run leave ``--out``
as it was. The resolved settings are stored in ``OUT/optimize.json``; resuming with different
ones is refused, naming the fields that differ.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

from agentworld.domains.registry import DomainRegistry, load_domains
from agentworld.errors import AgentWorldError, DataError
from agentworld.eval.config import (
    align_pool,
    check_section,
    fingerprint_file,
    redact_stored,
    resolved_sections,
)
from agentworld.eval.infer import make_backend, select_samples
from agentworld.eval.runfolder import NotARunError
from agentworld.io import atomic_write_text, dumps, loads
from agentworld.models.base import ChatBackend, is_backend_name
from agentworld.models.cache import ResponseCache
from agentworld.optimize.config import PromptOptConfig
from agentworld.optimize.evaluate import Scorer
from agentworld.optimize.run import Context, DomainRun, Journal
from agentworld.optimize.split import split_samples
from agentworld.optimize.store import DomainSummary, write_summary
from agentworld.outputs import is_empty
from agentworld.schema import discover_data

MARKER = "optimize.json"
KIND = "agentworld optimize prompts"


def read_marker(out: Path) -> Any:
    """The parsed :data:`MARKER` of ``out``; None when absent, not JSON, or not a small regular file
    (a link or a FIFO put there is neither followed nor waited on)."""
    from agentworld.marks import read_small

    raw = read_small(out / MARKER)
    try:
        return loads(raw) if raw is not None else None
    except ValueError:
        return None


def _stored(out: Path) -> dict[str, Any] | None:
    """The stored settings of ``out``, None when it is new or empty; refuses any other folder."""
    if not out.exists():
        return None
    if not out.is_dir():
        raise NotARunError(f"{out}: exists and is not a folder; give a new or empty folder as --out")
    if is_empty(out):
        return None
    stored = read_marker(out)
    if not isinstance(stored, dict) or stored.get("kind") != KIND:
        raise NotARunError(f"{out}: not empty and not written by 'agentworld optimize prompts' (no "
                           f"{MARKER}); nothing was changed. Give a new or empty folder as --out")
    return stored


def _sections(config: PromptOptConfig, domains: DomainRegistry, used: list[str]) -> dict[str, Any]:
    shipped = "\0".join(domains[d].system_prompt for d in used).encode()
    return resolved_sections(config, {
        "infer.data_sha256": fingerprint_file(discover_data(config.data)),
        "infer.v0_prompts_sha256": hashlib.sha256(shipped).hexdigest()})


Backends = tuple[ChatBackend, ChatBackend, ChatBackend | None]
"""World model, optimizer, judge (None: rule tier only)."""


def _backends(config: PromptOptConfig, used: list[str]) -> Backends:
    model = make_backend(config.model_endpoint(), config)
    check = getattr(model, "check_domains", None)
    if check is not None:
        check(used)
    optimizer = make_backend(config.optimizer_endpoint(), config)
    judge = None
    if config.judge_base_url or config.judge_model:
        if not config.judge_model:
            raise AgentWorldError("--judge-base-url needs --judge-model (the judge's model name)")
        if not config.judge_base_url and not is_backend_name(config.judge_model):
            raise AgentWorldError(f"--judge-model {config.judge_model!r} is not a backend name; give "
                                  "--judge-base-url for a served judge")
        judge = make_backend(config.judge_endpoint(), config)
    return model, optimizer, judge


def run_optimize(config: PromptOptConfig, *, model: ChatBackend | None = None,
                 optimizer: ChatBackend | None = None,
                 judge: ChatBackend | None = None) -> list[DomainSummary]:
    """Optimise the system prompt of every domain in the data (or ``--domains``); returns the summaries.

    Backends given here replace the configured endpoints (tests, embedding in a program).
    """
    stored = _stored(config.out)
    config = config.model_copy(update={"data": [p.resolve() for p in config.data]})
    samples = select_samples(config)
    if not samples:
        raise DataError("no samples to optimise on (check --data and --domains)", field="data")
    splits = split_samples(samples, config.val_fraction, config.seed)
    domains = load_domains()
    sections = _sections(config, domains, sorted(splits))
    if stored is not None:
        for name in ("infer", "judge"):
            old = redact_stored(stored.get(name))
            check_section(config.out, None if old is None else align_pool(old, sections[name]),
                          sections[name], "optimisation")
    owned: list[ChatBackend] = []
    if model is None or optimizer is None:
        model, optimizer, judge = _backends(config, sorted(splits))
        owned = [b for b in (model, optimizer, judge) if b is not None]
    config.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(config.out / MARKER, dumps({"kind": KIND, **sections}) + "\n")
    return asyncio.run(_run(config, splits, domains, model, optimizer, judge, owned))


async def _run(config: PromptOptConfig, splits: dict[str, Any], domains: DomainRegistry, model: ChatBackend,
               optimizer: ChatBackend, judge: ChatBackend | None,
               owned: list[ChatBackend]) -> list[DomainSummary]:
    cache = ResponseCache(config.out / "cache.jsonl", config.cache)
    journal = Journal(config.out / "journal.jsonl")
    scorer = Scorer(config=config, model=model, judge=judge, cache=cache, domains=domains,
                    gate=asyncio.Semaphore(config.concurrency),
                    judge_gate=asyncio.Semaphore(config.concurrency))
    ctx = Context(out=config.out, scorer=scorer, optimizer=optimizer, cache=cache, journal=journal)
    summaries: list[DomainSummary] = []
    try:
        for name in sorted(splits):
            summaries.append(await DomainRun(ctx, splits[name], domains[name].system_prompt).run())
            write_summary(config.out, summaries)
    finally:
        journal.close()
        cache.close()
        for backend in owned:
            closer = getattr(backend, "aclose", None)
            if closer is not None:
                await closer()
    return summaries

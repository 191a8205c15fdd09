"""``agentworld demo train``: a tiny world model trained on real terminal recordings, on the CPU.

Builds a tokenizer and a small Qwen2 model locally (nothing is downloaded), trains SFT on the bundled
real terminal recordings (``agentworld.corpus``), and measures on held-out trajectories, before
and after: the loss of the target (reasoning trace + tagged observation) and the judge-free rule
tier of greedy predictions. Writes ``report.html`` and ``result.json`` in the output folder.
"""

from __future__ import annotations

import html
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from agentworld.io import atomic_write_text


@dataclass(frozen=True)
class TrainDemoConfig:
    """Options of ``agentworld demo train``."""

    out: str = "agentworld-demo-train"
    steps: int = 150
    seed: int = 0
    eval_fraction: float = 0.15
    predict_samples: int = 12
    """Held-out turns predicted (greedy) for the rule tier, before and after."""
    max_new_tokens: int = 160


@dataclass(frozen=True)
class TrainDemoResult:
    steps: int
    train_rows: int
    eval_rows: int
    eval_loss_before: float | None
    eval_loss_after: float | None
    rules_before: float
    rules_after: float
    seconds: float


def _corpus_texts() -> list[str]:
    from agentworld.corpus import corpus_path

    rows = [json.loads(line) for line in corpus_path("terminal").read_text().splitlines() if line.strip()]
    return [text for row in rows if row.get("turn_idx") == 1 for text in (*row["prompt"], *row["response"])]


def _rule_score(model_dir: Path, rows: list[dict[str, Any]], max_new_tokens: int) -> float:
    """Mean rule-tier overall of greedy predictions for ``rows`` (prompt/completion messages)."""
    import torch
    import transformers

    from agentworld.eval.rules import score_rules
    from agentworld.models.parsing import parse_prediction

    tok: Any = transformers.AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(model_dir), local_files_only=True)
    model.eval()
    scores = []
    for row in rows:
        ids = tok.apply_chat_template(row["prompt"], add_generation_prompt=True, return_tensors="pt",
                                      return_dict=True)
        with torch.no_grad():
            out = model.generate(**ids, max_new_tokens=max_new_tokens, do_sample=False,
                                 pad_token_id=tok.pad_token_id)
        text = tok.decode(out[0][ids["input_ids"].shape[1]:], skip_special_tokens=True)
        truth = parse_prediction(row["completion"][0]["content"])
        scores.append(score_rules("terminal", parse_prediction(text), truth).overall)
    return sum(scores) / len(scores) if scores else 0.0


def run_train_demo(config: TrainDemoConfig, console: Console | None = None) -> TrainDemoResult:
    """Build, measure, train, measure again; print the table and write the report."""
    from agentworld.corpus import corpus_path
    from agentworld.train.config import SFTConfig
    from agentworld.train.sft import build_rows, run_sft
    from agentworld.train.tiny import build_tiny

    console = console or Console()
    out = Path(config.out)
    started = time.monotonic()
    console.rule("1. build a tiny tokenizer and model locally")
    init = build_tiny(out / "model-init", corpus=_corpus_texts(), hidden_size=64, layers=2,
                      seed=config.seed, vocab_size=2048)
    sft = SFTConfig(model=str(init), output_dir=out / "run", data=[{"path": corpus_path("terminal")}],
                    max_steps=config.steps, learning_rate=3e-3, per_device_train_batch_size=4,
                    max_length=8192, seed=config.seed, eval_fraction=config.eval_fraction, variants=10,
                    variants_per_sample=1, logging_steps=10, save_steps=max(config.steps, 1),
                    resume=False)
    _, eval_rows = build_rows(sft)
    probe = eval_rows[:config.predict_samples]
    console.rule("2. held-out rule tier before training")
    before = _rule_score(init, probe, config.max_new_tokens)
    console.rule(f"3. SFT for {config.steps} steps on real terminal recordings (CPU)")
    result = run_sft(sft)
    console.rule("4. held-out rule tier after training")
    after = _rule_score(Path(result.output_dir) / "final", probe, config.max_new_tokens)
    demo = TrainDemoResult(steps=result.steps, train_rows=result.train_rows, eval_rows=result.eval_rows,
                           eval_loss_before=result.eval_loss_before, eval_loss_after=result.eval_loss_after,
                           rules_before=before, rules_after=after, seconds=time.monotonic() - started)
    _show(demo, console)
    atomic_write_text(out / "result.json", json.dumps(asdict(demo), indent=2) + "\n")
    atomic_write_text(out / "report.html", _report(demo))
    console.print(f"report: {(out / 'report.html').resolve()}")
    return demo


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _show(demo: TrainDemoResult, console: Console) -> None:
    table = Table(title=f"Tiny world model, {demo.steps} SFT steps ({demo.seconds:.0f} s, CPU)")
    for col in ("held-out measure", "before", "after"):
        table.add_column(col, justify="left" if col == "held-out measure" else "right")
    table.add_row(f"loss of the target ({demo.eval_rows} rows)", _fmt(demo.eval_loss_before),
                  _fmt(demo.eval_loss_after))
    table.add_row("rule tier, greedy predictions (0-100)", f"{demo.rules_before:.2f}",
                  f"{demo.rules_after:.2f}")
    console.print(table)


def _report(demo: TrainDemoResult) -> str:
    rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(str(v))}</td></tr>"
                   for k, v in asdict(demo).items())
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>agentworld demo train</title>"
            "<style>body{font-family:sans-serif;margin:2em}td{border:1px solid #ccc;padding:4px 10px}</style>"
            "</head><body><h1>Tiny world model trained on real terminal recordings</h1>"
            "<p>Held-out trajectories, before vs after SFT: loss of the target (reasoning trace + tagged "
            "observation) and the judge-free rule tier of greedy predictions.</p>"
            f"<table>{rows}</table></body></html>")

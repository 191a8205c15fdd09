"""A real language model through the whole loop, on a CPU: SmolLM2-135M-Instruct zero-shot → SFT → GSPO →
GGUF → a llama.cpp server, on held-out recordings of the five real domains.

    python benchmarks/bench_real_lm.py --out bench-real-lm            # every step (resumes)
    python benchmarks/bench_real_lm.py --out bench-real-lm --table    # print the table of what is done

Steps (each skipped when its output exists, so a killed run continues where it stopped):

1. held-out data: the five real domains' held-out scenarios (never in any corpus) recorded fresh in
   their real environments, then at most ``--per-domain`` turns of each, spread over the sessions;
2. baselines: the trivial predictors (the strongest per domain) and retrieval over the shipped corpora
   (the held-out sessions are not in them; retrieval reads the official message list, not the view);
3. zero-shot: the packaged GGUF through the in-process llama.cpp backend;
4. SFT arms, the same steps, seed and rows per step (so the same token budget within a few percent;
   ``sft`` on every held-out turn, the ablations on a quarter of them, paired with ``sft`` by id):
   ``sft`` (the data pipeline's 7-category keep ratios), ``sft-nomask`` (every turn kept),
   ``sft-uniform`` (one keep ratio for every category, chosen so the kept turns hold as many tokens as
   the 7-category mask keeps); each exported to GGUF (q8_0) and evaluated through llama.cpp;
5. ``gspo``: GSPO from the ``sft`` model on one-turn training samples of the corpora, reward 0.9 the rule
   tier's overall score (the stand-in for the rubric judge: no LLM judge runs offline here) + 0.1 rule01
   (the hardened ``verified``); exported and evaluated the same way;
6. ``sft-served``: the ``sft`` GGUF served by ``python -m llama_cpp.server`` on 127.0.0.1, evaluated over
   HTTP; ``sft-transformers``: the ``sft`` model in float32 in-process (transformers) — the export's check,
   both on a quarter of the held-out turns (the same ids), paired with each other and with ``sft``;
7. the table: held-out rule overall per domain, and paired bootstrap intervals (``eval compare``);
8. uses (``probes``, ``closed-loop``, ``plan``): the ``sft`` model as the world model of ``eval probes``,
   ``eval closed-loop`` (terminal tasks) and ``benchmarks/bench_plan.py``, beside retrieval; outputs in
   ``OUT/uses``.

Every model sees the same prompt (:data:`agentworld.train.small_lm.VIEW`: brief system prompt, last turn,
its observation cut at 600 characters), greedy, at most 512 new tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from agentworld.domains.prompt_view import OFFICIAL
from agentworld.train.small_lm import SmallLMRecipe, eval_config, heldout_subset, train

ARMS = ("zero-shot", "sft", "sft-nomask", "sft-uniform", "gspo", "sft-served", "sft-transformers")
USES = ("probes", "closed-loop", "plan")
console = Console()


def record_heldout(out: Path, per_domain: int) -> list[Path]:
    """Step 1 (resumes): fresh recordings of the real domains' held-out scenarios, then the subset."""
    from agentworld.demo import DemoConfig, demo_domains, record_domain

    full = out / "heldout-full"
    files = []
    for plugin in demo_domains(DemoConfig()):
        path = full / f"{plugin.name}_test.jsonl"
        if record_domain(plugin, path, 0, console):
            files.append(path)
    return heldout_subset(files, out / "heldout", per_domain)


def run_eval(out: Path, name: str, data: list[Path], model: str, recipe: SmallLMRecipe, **kw: Any) -> Any:
    from agentworld.eval.runner import run_eval as run

    started = time.monotonic()
    finished = (out / "runs" / name / "scores.json").is_file()
    report = run(eval_config(data, out / "runs" / name, model, recipe, **kw))
    if not finished:  # a resumed, finished run keeps the time it took
        _times(out)[f"eval:{name}"] = time.monotonic() - started
    return report


_TIMES: dict[str, float] = {}


def _times(out: Path) -> dict[str, float]:
    if not _TIMES and (out / "times.json").is_file():
        _TIMES.update(json.loads((out / "times.json").read_text()))
    return _TIMES


def _save_times(out: Path) -> None:
    (out / "times.json").write_text(json.dumps(_times(out), indent=1))


def uniform_ratio(recipe: SmallLMRecipe) -> float:
    """The one keep ratio whose expected kept tokens equal what the 7-category mask keeps."""
    from agentworld.data.export_formats import trained
    from agentworld.train.common import load_samples
    from agentworld.train.small_lm import sft_config

    def tokens(sample: Any) -> int:
        return len(sample.action) + len(sample.observation)

    everything = sft_config(SmallLMRecipe(keep_ratios=dict.fromkeys(_categories(), 1.0)), Path("/tmp/unused"))
    masked = sft_config(recipe, Path("/tmp/unused"))
    total = sum(tokens(s) for s in load_samples(everything) if trained(s))
    kept = sum(tokens(s) for s in load_samples(masked) if trained(s))
    return kept / total


def _categories() -> list[str]:
    from agentworld.data.types import MASK_CATEGORIES

    return list(MASK_CATEGORIES)


def sft_arm(out: Path, name: str, recipe: SmallLMRecipe) -> Path:
    started = time.monotonic()
    _, gguf, result = train(recipe, out / "train" / name)
    if result is not None:
        _times(out)[f"train:{name}"] = time.monotonic() - started
        (out / "train" / name / "result.json").write_text(json.dumps(
            {"steps": result.steps, "train_rows": result.train_rows, "initial_loss": result.initial_loss,
             "final_loss": result.final_loss}, indent=1))
    return gguf


def gspo_arm(out: Path, recipe: SmallLMRecipe, steps: int, prompts: int) -> Path:
    """GSPO from the sft model on ``prompts`` one-turn corpus samples (short observations), rule reward."""
    from agentworld.corpus import shipped_corpora
    from agentworld.schema import read_bench_jsonl
    from agentworld.train.export import export
    from agentworld.train.rl import RLConfig, run_rl

    run_dir = out / "train" / "gspo"
    gguf = run_dir / "export" / f"model-{recipe.quant}.gguf"
    if gguf.is_file():
        return gguf
    pool = [s for path in shipped_corpora().values() for s in read_bench_jsonl(path)
            if 40 < len(s.ground_truth) < 600]
    pool.sort(key=lambda s: s.id)
    step = max(1, len(pool) // prompts)
    samples = pool[::step][:prompts]
    view = recipe.view
    config = RLConfig(model=str(out / "train" / "sft" / "final"), output_dir=run_dir, reward="offline_hybrid",
                      max_steps=steps, num_generations=4, per_device_train_batch_size=4,
                      steps_per_generation=4,
                      max_completion_length=256, learning_rate=5e-6, temperature=1.0, seed=recipe.seed,
                      prompt=view.system, history_turns=view.history_turns, history_chars=view.history_chars)
    started = time.monotonic()
    result = run_rl(config, samples=samples)
    _times(out)["train:gspo"] = time.monotonic() - started
    (run_dir / "result.json").write_text(json.dumps({"steps": result.steps, "rewards": result.rewards,
                                                     "prompts": [s.id for s in samples]}, indent=1))
    export(run_dir / "final", recipe.model, run_dir / "export", recipe.quant)
    return gguf


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def served_arm(out: Path, gguf: Path, data: list[Path], recipe: SmallLMRecipe) -> None:
    """The GGUF behind ``python -m llama_cpp.server`` (the serving guide's recipe), evaluated over HTTP."""
    import httpx

    if (out / "runs" / "sft-served" / "scores.json").is_file():
        return
    port = _free_port()
    log = (out / "server.log").open("wb")
    server = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
                               "--n_ctx", "8192",
                               "--model_alias", "smollm2-sft", "--host", "127.0.0.1", "--port", str(port)],
                              stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(120):
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        run_eval(out, "sft-served", data, "smollm2-sft", recipe, base_url=url, concurrency=1)
    finally:
        server.terminate()
        server.wait(timeout=30)


def uses(out: Path, gguf: Path, wanted: set[str], use_timeout: float) -> None:
    """Step 8: the trained model (its GGUF carries its prompt view) as the world model of ``eval probes``,
    ``eval closed-loop`` (terminal tasks, scripted agent) and ``bench_plan.py``, each beside retrieval (the
    oracle mock's numbers: bench_plan runs it; docs/results.md's closed-loop and probes tables have them)."""
    folder = out / "uses"
    folder.mkdir(exist_ok=True)
    agentworld = [sys.executable, "-m", "agentworld"]
    commands: dict[str, list[str]] = {}
    for name, model in (("sft", f"llamacpp:{gguf}"), ("retrieval", "retrieval")):
        commands[f"probes-{name}"] = [*agentworld, "eval", "probes", "--model", model, "--variants", "1",
                                      "--max-tokens", "512", "--temperature", "0", "--no-progress",
                                      "--out", str(folder / f"probes-{name}")]
        commands[f"closed-loop-{name}"] = [*agentworld, "eval", "closed-loop", "--tasks",
                                           "examples/closed_loop/terminal_tasks.jsonl", "--scripted-agent",
                                           "--model", model, "--arms", "bare", "--json",
                                           "--out", str(folder / f"closed-loop-{name}")]
    commands["plan"] = [sys.executable, "benchmarks/bench_plan.py", "--model", f"llamacpp:{gguf}",
                        "--corruption", "1.0", "--max-tokens", "512"]
    for key, command in commands.items():
        if key.rsplit("-", 1)[0] not in wanted and key not in wanted:
            continue
        log = folder / f"{key}.txt"
        if log.is_file() and log.stat().st_size:
            continue
        started = time.monotonic()
        try:
            done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=use_timeout)
            text, code = done.stdout + ("\n" + done.stderr if done.returncode else ""), str(done.returncode)
        except subprocess.TimeoutExpired as stopped:  # a use that does not finish is reported, not waited for
            partial = stopped.stdout.decode(errors="replace") if isinstance(stopped.stdout, bytes) else ""
            text, code = f"{partial}\nstopped after {use_timeout:.0f} s (--use-timeout)\n", "timeout"
        log.write_text(text)
        _times(out)[f"use:{key}"] = time.monotonic() - started
        console.print(f"{key}: exit {code}, {log}")
        _save_times(out)


def table(out: Path) -> dict[str, Any]:
    """The held-out table: rule overall per domain for every finished run, baselines, intervals."""
    from agentworld.eval.compare.command import compare
    from agentworld.eval.compare.config import CompareConfig
    from agentworld.eval.runfolder import is_run_folder

    runs = {p.name: p for p in sorted((out / "runs").iterdir()) if (p / "scores.json").is_file()} \
        if (out / "runs").is_dir() else {}
    scores = {name: json.loads((path / "scores.json").read_text()) for name, path in runs.items()}
    if not scores:
        return {}
    # the trivial predictors' scores come with every run; the run over the most turns holds them for all
    first = max(scores.values(), key=lambda s: s["rule_tier"]["overall"]["n"])
    domains = list(first["rule_tier"]["domains"])
    rows: dict[str, dict[str, float]] = {}
    line = first["rule_tier"]["domains"]
    rows["strongest trivial"] = {d: line[d]["strongest"] for d in domains}
    rows["strongest trivial"]["all"] = first["rule_tier"]["overall"]["strongest"]
    for name in ("retrieval", *ARMS):
        if name in scores:
            tier = scores[name]["rule_tier"]
            rows[name] = {d: tier["domains"][d]["overall"] for d in domains}
            rows[name]["all"] = tier["overall"]["overall"]
    small_ids = _ids(out / "heldout-small")
    for name in ("zero-shot", "sft"):  # the full runs restricted to the quarter the others ran on
        if name in runs and small_ids:
            rows[f"{name} (same {len(small_ids)} turns)"] = _restricted(runs[name], small_ids, domains)
    counts = {name: scores[name]["rule_tier"]["overall"]["n"] for name in scores}
    closed = {name: _closed(runs[name]) for name in runs}
    intervals: dict[str, Any] = {}
    pairs = [("zero-shot", "sft"), ("sft-nomask", "sft"), ("sft-uniform", "sft"), ("sft", "gspo"),
             ("sft-transformers", "sft-served"), ("sft-transformers", "sft"), ("sft", "sft-served"),
             ("retrieval", "sft")]
    for base, run in pairs:
        if base in runs and run in runs and is_run_folder(runs[base]):
            result = compare(CompareConfig(run=[runs[base], runs[run]], metrics=["rule.overall"],
                                           bootstrap=2000, allow_different_data=True))
            intervals[f"{run} - {base}"] = {r.domain: [r.diff, r.ci_low, r.ci_high] for r in result.rows}
    return {"rows": rows, "closed": closed, "counts": counts, "intervals": intervals, "times": _times(out)}


def _ids(folder: Path) -> set[str]:
    if not folder.is_dir():
        return set()
    return {str(json.loads(line)["id"]) for path in folder.glob("*_test.jsonl")
            for line in path.read_text().splitlines() if line.strip()}


def _restricted(run: Path, ids: set[str], domains: list[str]) -> dict[str, float]:
    """A run's mean rule overall per domain (and ``all``, every turn alike) over the samples ``ids``."""
    from agentworld.io import read_journal

    rules = [r for r in read_journal(run / "rules.jsonl") if str(r["id"]) in ids]
    by: dict[str, list[float]] = {}
    for r in rules:
        by.setdefault(r["domain"], []).append(float(r["rule"]["overall"]))
    out = {d: sum(v) / len(v) for d, v in by.items()}
    values = [v for vs in by.values() for v in vs]
    out["all"] = sum(values) / len(values) if values else 0.0
    return {d: out.get(d, 0.0) for d in [*domains, "all"]}


def _closed(run: Path) -> float:
    from agentworld.io import read_journal
    from agentworld.train.rewards import strict_prediction

    preds = [r for r in read_journal(run / "predictions.jsonl") if not r.get("error")]
    if not preds or "raw" not in preds[0]:
        return float("nan")
    closed = [strict_prediction(r.get("raw") or "", "predicted_observation") is not None for r in preds]
    return sum(closed) / len(closed)


def show(result: dict[str, Any]) -> None:
    from rich.table import Table

    if not result:
        console.print("nothing finished yet")
        return
    rows = result["rows"]
    domains = list(next(iter(rows.values())))
    t = Table(title="Held-out rule overall (0-100), SmolLM2-135M-Instruct, brief prompt, greedy")
    t.add_column("model")
    for d in domains:
        t.add_column(d, justify="right")
    t.add_column("closed tag", justify="right")
    t.add_column("turns", justify="right")
    for name, values in rows.items():
        closed = result["closed"].get(name)
        t.add_row(name, *(f"{values[d]:.2f}" for d in domains),
                  "" if closed is None or closed != closed else f"{closed:.0%}",
                  str(result.get("counts", {}).get(name, "")))
    console.print(t)
    for label, by_domain in result["intervals"].items():
        cells = ", ".join(f"{d} {v[0]:+.2f} [{v[1]:+.2f}, {v[2]:+.2f}]" for d, v in by_domain.items()
                          if v[0] is not None)
        console.print(f"{label}: {cells}")
    console.print("times (s): " + ", ".join(f"{k} {v:.0f}" for k, v in result["times"].items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench-real-lm"))
    parser.add_argument("--per-domain", type=int, default=16, help="held-out turns per domain")
    parser.add_argument("--steps", type=int, default=64, help="SFT optimizer steps per arm (4 rows each)")
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--gspo-steps", type=int, default=8)
    parser.add_argument("--gspo-prompts", type=int, default=16)
    parser.add_argument("--only", nargs="*", default=None, help="run only these steps (heldout, baselines, "
                        + ", ".join((*ARMS, *USES)) + ")")
    parser.add_argument("--use-timeout", type=float, default=2400.0, help="seconds each use may run")
    parser.add_argument("--table", action="store_true", help="only print the table of what is done")
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.table:
        show(table(out))
        return 0
    wanted = set(args.only) if args.only else {"heldout", "baselines", *ARMS, *USES}
    recipe = SmallLMRecipe(steps=args.steps, learning_rate=args.lr)
    data = record_heldout(out, args.per_domain)
    # the ablations, GSPO and the export's check run on a quarter of the held-out turns (the same ids as in
    # the full runs, paired by id): each full evaluation takes about 14 minutes on two cores
    small = heldout_subset(data, out / "heldout-small", max(1, args.per_domain // 4))
    if "baselines" in wanted:
        # retrieval is no language model: it reads the whole official message list (its own retrieval keys)
        run_eval(out, "retrieval", data, "retrieval", SmallLMRecipe(**{**recipe.__dict__, "view": OFFICIAL}))
    if "zero-shot" in wanted:
        run_eval(out, "zero-shot", data, "llamacpp:smollm2", recipe)
    _save_times(out)
    arms = {"sft": None, "sft-nomask": dict.fromkeys(_categories(), 1.0)}
    for name, ratios in arms.items():
        if name in wanted:
            gguf = sft_arm(out, name, SmallLMRecipe(**{**recipe.__dict__, "keep_ratios": ratios}))
            run_eval(out, name, data if name == "sft" else small, f"llamacpp:{gguf}", recipe)
            _save_times(out)
    if "sft-uniform" in wanted:
        ratio = uniform_ratio(recipe)
        console.print(f"uniform keep ratio {ratio:.3f} (same expected tokens as the 7-category mask)")
        uniform = dict.fromkeys(_categories(), ratio)
        gguf = sft_arm(out, "sft-uniform", SmallLMRecipe(**{**recipe.__dict__, "keep_ratios": uniform}))
        run_eval(out, "sft-uniform", small, f"llamacpp:{gguf}", recipe)
        _save_times(out)
    if "gspo" in wanted:
        gguf = gspo_arm(out, recipe, args.gspo_steps, args.gspo_prompts)
        run_eval(out, "gspo", small, f"llamacpp:{gguf}", recipe)
        _save_times(out)
    sft_gguf = out / "train" / "sft" / "export" / f"model-{recipe.quant}.gguf"
    if "sft-served" in wanted and sft_gguf.is_file():
        served_arm(out, sft_gguf, small, recipe)
        _save_times(out)
    if "sft-transformers" in wanted and sft_gguf.is_file():
        run_eval(out, "sft-transformers", small, f"transformers:{out / 'train' / 'sft' / 'final'}", recipe)
        _save_times(out)
    if wanted & set(USES) and sft_gguf.is_file():
        uses(out, sft_gguf, wanted, args.use_timeout)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = table(out)
    result["peak_rss_mb"] = peak
    (out / "table.json").write_text(json.dumps(result, indent=1))
    show(result)
    console.print(f"peak memory of this process: {peak:.0f} MB; cpus: {os.cpu_count()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Predict before acting, measured: real steps wasted and tasks solved without and with the planner.

A domain's futile-action tasks (the terminal's: ``agentworld.domains.terminal.futile``): a
scripted agent proposes the futile candidate first and a working one second. Without the planner it
takes the first; with it, the candidates are imagined on forks by a world model, scored by the
task's rule (no error on the screen, back at the prompt) and the best runs. Everything chosen runs
for real in a fresh sandbox and success is checked there. World models: the mock server replaying
ground truth recorded at the start from real runs of every candidate (corruption 0, then the given
rates: the planner's advantage must shrink), the retrieval baseline (the shipped terminal corpus)
and a served model when given.

    python benchmarks/bench_plan.py [--corruption 0.5 1.0] [--budget 1] [--tasks cd-missing ...]
    python benchmarks/bench_plan.py --model-base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen3-8B
    python benchmarks/bench_plan.py --model llamacpp:bench-real-lm/train/sft/export/model-q8_0.gguf

Exits 1 when the planner over the faithful mock runs any futile action, or when the highest
corruption rate does not lose part of its advantage.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from agentworld.domains import DEFAULT_DOMAIN
from agentworld.endpoints import build_backend
from agentworld.io import atomic_write_jsonl
from agentworld.plan.bench import Outcome, plan_suite, record_truth, run_task, summarize, truth_rows
from agentworld.serve.mock_server import MockConfig, run_mock_server


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domain", default=DEFAULT_DOMAIN,
                        help="whose futile-action tasks (default: %(default)s)")
    parser.add_argument("--tasks", nargs="*", default=None, help="task names (default: all)")
    parser.add_argument("--corruption", nargs="*", type=float, default=[0.5, 1.0],
                        help="corruption rates of the mock besides 0")
    parser.add_argument("--budget", type=int, default=1, help="real steps the agent may take per task")
    parser.add_argument("--samples", type=int, default=1, help="imagined rollouts per candidate")
    parser.add_argument("--no-retrieval", action="store_true", help="skip the retrieval baseline")
    parser.add_argument("--model-base-url", default=None, help="a served world model to measure as well")
    parser.add_argument("--model", default="default", help="its model name; without --model-base-url, an "
                        "in-process backend to measure as well (llamacpp:FILE.gguf, transformers:DIR)")
    parser.add_argument("--model-api-key", default=os.environ.get("AGENTWORLD_MODEL_API_KEY"),
                        help="its key (default: $AGENTWORLD_MODEL_API_KEY)")
    parser.add_argument("--max-tokens", type=int, default=1024,
                        help="most tokens of each imagined observation (default: %(default)s)")
    return parser.parse_args(argv)


async def run_arm(tasks: Sequence[Any], domain: str, arm: str, backend: Any, budget: int,
                  samples: int, max_tokens: int | None = None) -> list[Outcome]:
    outcomes = []
    for task in tasks:
        outcomes.append(await run_task(task, arm, backend, domain=domain, budget=budget, samples=samples,
                                       max_tokens=max_tokens))
    if backend is not None and hasattr(backend, "aclose"):
        await backend.aclose()
    return outcomes


def table(rows: list[tuple[str, dict[str, int], dict[str, int]]]) -> str:
    head = (f"{'world model':<26} {'solved':>15} {'wasted steps':>15} {'futile run':>15}\n"
            f"{'':<26} {'no plan | plan':>15} {'no plan | plan':>15} {'no plan | plan':>15}")
    lines = [head]
    for name, base, planned in rows:
        cells = [f"{base[k]:>7} | {planned[k]:<5}" for k in ("solved", "wasted", "futile")]
        lines.append(f"{name:<26} " + " ".join(f"{c:>15}" for c in cells))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    known = plan_suite(args.domain).tasks
    tasks = [t for t in known if args.tasks is None or t.name in args.tasks]
    if not tasks:
        sys.exit(f"no task named {args.tasks}; known: {', '.join(t.name for t in known)}")
    started = time.monotonic()
    rows: list[dict[str, Any]] = []
    for task in tasks:
        rows += truth_rows(task, record_truth(task, args.domain), args.domain)
    print(f"recorded {len(rows)} candidate screens of {len(tasks)} tasks for real "
          f"in {time.monotonic() - started:.0f} s", flush=True)
    results: list[tuple[str, dict[str, int], dict[str, int]]] = []
    per_task: dict[str, list[Outcome]] = {}
    with tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
        data = Path(folder) / "truth.jsonl"
        atomic_write_jsonl(data, rows)
        base = asyncio.run(run_arm(tasks, args.domain, "no planner", None, args.budget, args.samples))
        models: list[tuple[str, Any]] = []
        for rate in [0.0, *args.corruption]:
            url = stack.enter_context(run_mock_server(MockConfig(data=[data], corruption_rate=rate)))
            models.append((f"mock, corruption {rate:g}", lambda url=url: build_backend("mock", url)))
        if not args.no_retrieval:
            models.append(("retrieval", lambda: build_backend("retrieval")))
        if args.model_base_url or args.model.startswith(("llamacpp:", "transformers:")):
            models.append((args.model, lambda: build_backend(args.model, args.model_base_url,
                                                             args.model_api_key)))
        for name, make in models:
            outcomes = asyncio.run(run_arm(tasks, args.domain, name, make(), args.budget, args.samples,
                                           args.max_tokens))
            per_task[name] = outcomes
            results.append((name, summarize(base), summarize(outcomes)))
            print(f"  {name}: done ({time.monotonic() - started:.0f} s)", flush=True)
    print(f"\n{len(tasks)} futile-action tasks, {args.budget} real step(s) per task, "
          f"{args.samples} sample(s) per candidate, rule scorer\n")
    print(table(results))
    print("\nfirst real action (F futile, W working):")
    for name, outcomes in per_task.items():
        marks = " ".join(f"{o.task}={'W' if tasks[i].candidates[o.order[0]].works else 'F'}"
                         for i, o in enumerate(outcomes))
        print(f"  {name:<26} {marks}")
    truth = summarize(per_task["mock, corruption 0"])
    worst = summarize(per_task[f"mock, corruption {max([0.0, *args.corruption]):g}"])
    ok = truth["futile"] == 0 and (not args.corruption or worst["wasted"] > truth["wasted"])
    print(f"\nfaithful mock avoids every futile action: {truth['futile'] == 0}; advantage shrinks with "
          f"corruption: {not args.corruption or worst['wasted'] > truth['wasted']}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

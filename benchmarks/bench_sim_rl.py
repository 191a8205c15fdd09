"""Train an agent in simulation, evaluate it in reality: SmolLM2-135M-Instruct as a tool-using agent.

    python benchmarks/bench_sim_rl.py --out bench-sim-rl            # every arm (resumes: one file a stage)
    python benchmarks/bench_sim_rl.py --out bench-sim-rl --table    # the table of what is done

Arms, the same agent, seeds and budget (K sampled episodes per training task, one rejection-sampling
round, the same number of update steps):

- ``untrained``: the packaged model, exported the same way as the others (q8_0);
- ``real``: episodes on the real MCP servers (``domains/mcp/task_suite``'s train templates), kept when
  the check on the server's real state passes;
- ``sim``: the same tasks, every call answered by the simulator (``retrieval`` over the shipped MCP corpus
  + the state ledger; no real server is touched), kept when the task's trace check passes;
- ``synth``: as many episodes in worlds made offline by ``synth envs --per-seed`` from the tau-bench seeds,
  answered by the ``world-state`` model, kept when the world's state check passes.

Every arm is then scored on the **test** templates (never trained on, by any arm) on the real servers,
greedy. The table: success rate per arm, paired bootstrap intervals against ``untrained`` and ``real``,
the real tool calls and sandbox seconds each arm spent in training, and for the simulator arm how many
of its failed test episodes the simulator would have answered differently (closed-loop divergence).
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agentworld.domains.mcp.task_env import RealTaskEnv as RealEnv
from agentworld.domains.mcp.task_suite import start, test_tasks, train_tasks
from agentworld.eval.compare.stats import paired_bootstrap
from agentworld.io import atomic_write_text
from agentworld.models.base import create_backend
from agentworld.synth.task_env import WorldTaskEnv
from agentworld.train.agent_rft import (
    DONE,
    Episode,
    UpdateSettings,
    relevant_tools,
    run_episode,
    sft_examples,
    supervised_update,
)
from agentworld.train.sim_task_env import SimTaskEnv as SimEnv

ARMS = ("untrained", "real", "sim", "synth")
TAU = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "tau_bench_airline_gpt4o_dev.json"


# -- stages ------------------------------------------------------------------------------------------

def server_tools(out: Path) -> dict[str, list[dict[str, Any]]]:
    """Each server's tools/list (one start per server, no tool call), cached in OUT/tools.json."""
    path = out / "tools.json"
    if path.exists():
        return dict(json.loads(path.read_text()))
    tools = {}
    for task in {t.server: t for t in (*train_tasks(), *test_tasks())}.values():
        env = start(task)
        tools[task.server] = env.tools
        env.close()
    atomic_write_text(path, json.dumps(tools))
    return tools


def synth_worlds(out: Path) -> list[tuple[Any, Any]]:
    """Every (world, task) pair of ``synth envs --per-seed 25`` on the tau-bench seeds (kept worlds), in a
    fixed shuffled order: the synth arm acts in the first ones, the warm start learns from later ones."""
    from agentworld.synth.world import load_world

    folder = out / "synth"
    if not (folder / "summary.json").exists():
        subprocess.run([sys.executable, "-m", "agentworld", "synth", "envs", "--seed-files", str(TAU),
                        "--per-seed", "25", "--out", str(folder), "--generator-model", "synth-template",
                        "--model", "world-state", "--no-progress"], check=True)
    pairs = []
    for world_dir in sorted(folder.glob("env_*")):
        if json.loads((world_dir / "status.json").read_text()).get("kept"):
            world = load_world(world_dir)
            pairs += [(world, task) for task in world.tasks]
    random.Random(0).shuffle(pairs)
    return pairs


def warm_start(out: Path, args: argparse.Namespace) -> Path:
    """The shared starting point of every arm: behaviour cloning on synthesized worlds' reference plans.

    Why: from the packaged model no arm keeps anything (cold start: 0 of 256 real episodes passed, see
    docs/results.md), so rejection sampling has nothing to learn from. The demonstrations come from worlds no
    arm acts in (other (world, task) pairs than the synth arm's), replayed through the simulator with
    ``world-state`` observations, so no real server and no test template is involved.
    """
    folder = out / "warm"
    gguf = folder / "agent.gguf"
    if (folder / "update.json").exists():
        return gguf
    from agentworld.models.scripted import ScriptedBackend

    pairs = synth_worlds(out)[64:64 + args.warm_demos]
    state_model = create_backend("world-state")
    demos = []
    for world, task in pairs:
        plan = [json.dumps({"name": s.tool, "arguments": s.arguments}) for s in task.reference_plan]
        replay = ScriptedBackend(plan, default=DONE)
        env = WorldTaskEnv(world, task, state_model, seed=0)
        shown = {t["name"] for t in relevant_tools(env.tools, env.instruction, args.tool_choices)}
        if not {s.tool for s in task.reference_plan} <= shown:
            continue
        episode = asyncio.run(run_episode(replay, env, task=task.id, max_steps=len(plan) + 1,
                                          tool_choices=args.tool_choices))
        demos.append(episode)
    examples = sft_examples(demos)
    settings = UpdateSettings(steps=args.warm_steps, seed=args.seed)
    _, stats = supervised_update("smollm2", examples, gguf, settings, keep_weights=True)
    save(folder / "update.json", {**stats, "demos": len(demos), "pairs": len(pairs)})
    return gguf


def episode_row(episode: Episode, arm: str, real_calls: int = 0) -> dict[str, Any]:
    return {"arm": arm, "task": episode.task, "passed": episode.passed, "reasons": episode.reasons[:3],
            "calls": episode.calls, "observations": [o[:400] for o in episode.observations],
            "messages": [{"role": m.role, "content": m.content} for m in episode.messages],
            "env_s": round(episode.env_s, 3), "real_calls": real_calls}


async def sample(arm: str, agent: Any, args: argparse.Namespace, tools: dict[str, list[dict[str, Any]]],
                 out: Path) -> list[dict[str, Any]]:
    """K episodes per training task in the arm's environment (sampled at temperature ``--temperature``)."""
    rows = []
    train = train_tasks()
    wm = create_backend("retrieval") if arm == "sim" else None
    state_model = create_backend("world-state") if arm == "synth" else None
    synth = synth_worlds(out)[:len(train)] if arm == "synth" else []
    for k in range(args.k):
        for i, task in enumerate(train):
            env: Any
            if arm == "real":
                env = RealEnv(task, tools[task.server])
            elif arm == "sim":
                env = SimEnv(task, tools[task.server], wm, seed=k)
            else:
                world, wtask = synth[i % len(synth)]
                env = WorldTaskEnv(world, wtask, state_model, seed=k)
            name = task.id if arm != "synth" else f"{env.world.name}/{env.task.id}"
            episode = await run_episode(agent, env, task=name, max_steps=args.max_steps,
                                        temperature=args.temperature, seed=k * 100 + i,
                                        max_tokens=args.max_tokens, constrained=True,
                                        tool_choices=args.tool_choices)
            rows.append(episode_row(episode, arm, getattr(env, "real_calls", 0)))
    return rows


async def evaluate(agent: Any, arm: str, args: argparse.Namespace, tools: dict[str, list[dict[str, Any]]],
                   tasks: Any) -> list[dict[str, Any]]:
    rows = []
    for task in tasks:
        env = RealEnv(task, tools[task.server])
        episode = await run_episode(agent, env, task=task.id, max_steps=args.max_steps, temperature=0.0,
                                    seed=0, max_tokens=args.max_tokens, constrained=True,
                                    tool_choices=args.tool_choices)
        rows.append(episode_row(episode, arm, env.real_calls))
    return rows


def _messages(rows: list[dict[str, Any]]) -> list[list[Any]]:
    from agentworld.schema import Message

    episodes = [Episode(task=r["task"], messages=[Message(**m) for m in r["messages"]], calls=r["calls"],
                        passed=r["passed"]) for r in rows]
    return sft_examples(episodes)


def save(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(data, ensure_ascii=False) + "\n")


Tools = dict[str, list[dict[str, Any]]]


async def run_arm(arm: str, args: argparse.Namespace, out: Path, tools: Tools) -> None:
    """Sample K episodes a training task from the shared start, keep the passed ones, update, evaluate."""
    folder = out / arm
    start_gguf = out / "warm" / "agent.gguf"
    gguf = folder / "agent.gguf" if arm != "untrained" else start_gguf
    if arm != "untrained" and not (folder / "update.json").exists():
        if not (folder / "samples.json").exists():
            agent = create_backend("llamacpp", path=str(start_gguf), seed=args.seed)
            started = time.perf_counter()
            rows = await sample(arm, agent, args, tools, out)
            await agent.aclose()
            save(folder / "samples.json", {"seconds": round(time.perf_counter() - started, 1), "rows": rows})
        samples = json.loads((folder / "samples.json").read_text())
        examples = _messages(samples["rows"])
        _, stats = supervised_update(start_gguf.with_suffix(""), examples, gguf,
                                     UpdateSettings(steps=args.steps, seed=args.seed))
        save(folder / "update.json", stats)
    runs = (("eval.json", test_tasks()), ("eval_train.json", train_tasks()))
    for name, tasks in runs if args.train_eval else runs[:1]:
        if (folder / name).exists():
            continue
        agent = create_backend("llamacpp", path=str(gguf), seed=args.seed)
        started = time.perf_counter()
        rows = await evaluate(agent, arm, args, tools, tasks)
        await agent.aclose()
        save(folder / name, {"seconds": round(time.perf_counter() - started, 1), "rows": rows})


async def divergence(out: Path, tools: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Replay each failed real test episode of the sim arm in the simulator: where it answers otherwise."""
    path = out / "sim" / "divergence.json"
    if path.exists():
        return dict(json.loads(path.read_text()))
    rows = json.loads((out / "sim" / "eval.json").read_text())["rows"]
    by_id = {t.id: t for t in test_tasks()}
    wm = create_backend("retrieval")
    failed = [r for r in rows if not r["passed"] and r["calls"]]
    diverged = 0
    examples = []
    for row in failed:
        env = SimEnv(by_id[row["task"]], tools[by_id[row["task"]].server], wm, seed=0)
        for call, real in zip(row["calls"], row["observations"], strict=False):
            simulated = await env.call(call["tool"], call["arguments"])
            errors = (simulated.lower().startswith("error"), real.lower().startswith("error"))
            close = difflib.SequenceMatcher(None, simulated[:400], real[:400]).ratio()
            if errors[0] != errors[1] or close < 0.5:
                diverged += 1
                examples.append({"task": row["task"], "call": call, "real": real[:160],
                                 "sim": simulated[:160]})
                break
    result = {"failed_with_calls": len(failed), "diverged": diverged, "examples": examples[:5]}
    save(path, result)
    return result


def kept_on_real(out: Path) -> dict[str, Any]:
    """Replay the sim arm's kept episodes on the real servers: how many of the simulator's successes
    (trace check passed) are successes in reality (real state check)."""
    path = out / "sim" / "kept_on_real.json"
    if path.exists():
        return dict(json.loads(path.read_text()))
    from agentworld.domains.mcp.task_suite import TASKS, check, play

    by_id = {t.id: t for t in TASKS}
    kept = [r for r in json.loads((out / "sim" / "samples.json").read_text())["rows"] if r["passed"]]
    results = []
    for row in kept:
        task = by_id[row["task"]]
        env = start(task)
        try:
            play(env, row["calls"])
            verdict = check(task, env)
        finally:
            env.close()
        results.append({"task": row["task"], "real_passed": verdict.passed, "reasons": verdict.reasons[:2]})
    result = {"kept": len(kept), "real_passed": sum(r["real_passed"] for r in results), "episodes": results}
    save(path, result)
    return result


def table(out: Path) -> None:
    evals = {arm: json.loads((out / arm / "eval.json").read_text())["rows"] for arm in ARMS
             if (out / arm / "eval.json").exists()}
    print(f"{'arm':<10} {'test (new templates)':>20} {'train templates':>15} {'kept/sampled':>13} "
          f"{'real calls':>10} {'sandbox s':>9} {'sample s':>8} {'update s':>8}")
    for arm, rows in evals.items():
        passed = sum(r["passed"] for r in rows)
        seen_path = out / arm / "eval_train.json"
        seen = json.loads(seen_path.read_text())["rows"] if seen_path.exists() else []
        samples_path = out / arm / "samples.json"
        empty = {"rows": [], "seconds": 0}
        sampled = json.loads(samples_path.read_text()) if samples_path.exists() else empty
        samples = sampled["rows"]
        kept = sum(r["passed"] for r in samples)
        real_calls = sum(r["real_calls"] for r in samples)
        sandbox = sum(r["env_s"] for r in samples) if arm == "real" else 0.0
        update_path = out / arm / "update.json"
        update = json.loads(update_path.read_text()) if update_path.exists() else {"seconds": 0}
        seen_passed = sum(r["passed"] for r in seen)
        print(f"{arm:<10} {passed:>9}/{len(rows):<3} {passed / len(rows):6.1%} "
              f"{seen_passed:>6}/{len(seen):<3} {seen_passed / max(1, len(seen)):5.1%} "
              f"{kept:>5}/{len(samples):<7} {real_calls:>10} {sandbox:>9.1f} {sampled['seconds']:>8.0f} "
              f"{update['seconds']:>8.0f}")
    for name in ("eval.json", "eval_train.json"):
        runs = {arm: json.loads((out / arm / name).read_text())["rows"] for arm in ARMS
                if (out / arm / name).exists()}
        for ref in ("untrained", "real"):
            for arm, rows in runs.items():
                if arm == ref or ref not in runs:
                    continue
                base = {r["task"]: r["passed"] for r in runs[ref]}
                diffs = [float(r["passed"]) - float(base[r["task"]]) for r in rows if r["task"] in base]
                interval = paired_bootstrap(diffs)
                shown = f"[{interval[0]:+.3f}, {interval[1]:+.3f}]" if interval else "n/a"
                where = "test" if name == "eval.json" else "train templates"
                print(f"{where}: {arm} − {ref}: {sum(diffs) / len(diffs):+.3f} {shown} (n={len(diffs)})")
    replayed = out / "sim" / "kept_on_real.json"
    if replayed.exists():
        r = json.loads(replayed.read_text())
        print(f"sim arm: {r['real_passed']} of its {r['kept']} kept episodes (trace check passed in the "
              "simulator) pass the real state check when replayed on the real servers")
    div = out / "sim" / "divergence.json"
    if div.exists():
        d = json.loads(div.read_text())
        print(f"sim arm: {d['diverged']} of {d['failed_with_calls']} failed test episodes with calls had a "
              "step the simulator answers differently (error vs not, or text similarity < 0.5)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", choices=ARMS, action="append")
    parser.add_argument("--k", type=int, default=6, help="episodes sampled per training task")
    parser.add_argument("--steps", type=int, default=32, help="update steps per arm")
    parser.add_argument("--max-steps", type=int, default=3, help="agent turns per episode")
    parser.add_argument("--max-tokens", type=int, default=120, help="tokens per agent turn")
    parser.add_argument("--temperature", type=float, default=1.0, help="sampling temperature in training")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warm-demos", type=int, default=300, help="synthesized demonstrations (warm start)")
    parser.add_argument("--warm-steps", type=int, default=150, help="update steps of the warm start")
    parser.add_argument("--tool-choices", type=int, default=5,
                        help="tools shown to the agent per task (retrieved by the instruction's words)")
    parser.add_argument("--no-train-eval", dest="train_eval", action="store_false",
                        help="evaluate on the test templates only (not also on the training tasks)")
    parser.add_argument("--table", action="store_true", help="print the table of what is done and stop")
    args = parser.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.table:
        tools = server_tools(args.out)
        warm_start(args.out, args)
        for arm in args.only or ARMS:
            started = time.perf_counter()
            asyncio.run(run_arm(arm, args, args.out, tools))
            print(f"{arm}: done in {time.perf_counter() - started:.0f} s", flush=True)
        if (args.out / "sim" / "eval.json").exists():
            asyncio.run(divergence(args.out, tools))
        if (args.out / "sim" / "samples.json").exists():
            kept_on_real(args.out)
    table(args.out)


if __name__ == "__main__":
    main()

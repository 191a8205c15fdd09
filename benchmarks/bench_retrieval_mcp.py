"""How well the retrieval world model predicts held-out MCP calls, beside trivial baselines.

Data: 40 real tau-bench airline trajectories (10 tasks x 4 trials, ``shared/data``), read with the
``openai-chat`` converter. Three splits: trial 3 held out (its tasks were seen in trials 0-2),
tasks 47-49 held out (unseen users and bookings), and leave one trajectory out. For each held-out
call it prints the share whose prediction comes from the same tool and whose observation is exactly
the recorded one, beside (a) the corpus's most frequent observation, (b) the most frequent
observation of the same tool, and the ceiling (the true observation is anywhere in the corpus).
This measures quality, not speed; nothing is timed.

    python benchmarks/bench_retrieval_mcp.py [--data ../shared/data/tau_bench_airline_gpt4o_dev.json]
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from agentworld.data.ingest import ingest
from agentworld.domains.actions import tool_call
from agentworld.models.retrieval import RetrievalIndex
from agentworld.schema import Trajectory

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "tau_bench_airline_gpt4o_dev.json"


def _tool(action: str) -> str | None:
    call = tool_call(action)
    return call[0] if call else None


def evaluate(splits: list[tuple[list[Trajectory], list[Trajectory]]]) -> dict[str, float]:
    """Shares (in %) over every held-out call of every (corpus, held-out) split."""
    counts: Counter[str] = Counter()
    for corpus, held in splits:
        index = RetrievalIndex(corpus)
        everything = Counter(t.observation for t in index.transitions)
        per_tool: dict[str | None, Counter[str]] = {}
        for t in index.transitions:
            per_tool.setdefault(t.group, Counter())[t.observation] += 1
        common = everything.most_common(1)[0][0]
        for sample in (s for traj in held for s in traj.samples()):
            tool, truth = _tool(sample.action), sample.ground_truth
            best = index.nearest(sample)[0]
            counts["n"] += 1
            counts["retrieval: same tool"] += best.group == tool
            counts["retrieval: exact"] += best.observation == truth
            counts["most frequent: exact"] += common == truth
            same = per_tool.get(tool, Counter())
            counts["tool's most frequent: exact"] += bool(same) and same.most_common(1)[0][0] == truth
            counts["ceiling: tool recorded"] += tool in per_tool
            counts["ceiling: exact"] += truth in everything
    n = counts.pop("n")
    return {"calls": n, **{k: 100 * v / n for k, v in counts.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    trajs = list(ingest(args.data, "openai-chat"))
    by_trial = [t for t in trajs if t.meta["trial"] != 3], [t for t in trajs if t.meta["trial"] == 3]
    by_task = [t for t in trajs if t.meta["task_id"] < 47], [t for t in trajs if t.meta["task_id"] >= 47]
    splits = {"trial 3 held out": [by_trial], "tasks 47-49 held out": [by_task],
              "leave one out": [(trajs[:i] + trajs[i + 1:], [t]) for i, t in enumerate(trajs)]}
    results = {name: evaluate(s) for name, s in splits.items()}
    print(f"{'share of held-out calls':<30}" + "".join(f"{name:>22}" for name in results))
    for metric in next(iter(results.values())):
        cells = (f"{r[metric]:>22.0f}" if metric == "calls" else f"{r[metric]:>21.1f}%"
                 for r in results.values())
        print(f"{metric:<30}" + "".join(cells))

if __name__ == "__main__":
    main()

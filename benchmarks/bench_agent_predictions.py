"""The agent's own prediction accuracy on the terminal's held-out tasks, with a world model as imagination.

What it measures: ``agentworld eval agent-predictions --model NAME`` over the built-in terminal
held-out tasks (scenarios kept out of the shipped corpus), every action run for real in the sandboxed
shell, with the scripted agent whose *imagination* is a world model
(:class:`agentworld.eval.agentpred.imagine.ImaginingAgent`): before each fixed action it asks the world
model (default: the offline ``retrieval`` backend over the shipped corpus, which holds no recording of
the held-out tasks; ``--keep-heldout`` matters only for a corpus that does) what the action
will show, given the real history it has seen, and answers with that prediction. Beside it, from the
same run, the trivial baselines the summary always carries: an empty prediction and "repeat the
previous observation".

Run (from the repository root; takes about a minute on a quiet machine)::

    PYTHONPATH=src python benchmarks/bench_agent_predictions.py [--out DIR] [--model retrieval]

The run folder is resumable; a second run with the same ``--out`` only prints the summary again.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from agentworld.eval.agentpred.command import run_agent_predictions
from agentworld.eval.agentpred.config import AgentPredConfig
from agentworld.eval.agentpred.summary import render_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="run folder (default: a temporary one)")
    parser.add_argument("--model", default="retrieval", help="world-model backend name used as imagination")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--keep-heldout", action="store_true",
                        help="leave the held-out tasks' recordings in the retrieval index (an upper bound)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-agentpred-")) / "run"
    config = AgentPredConfig(model=args.model, keep_heldout=args.keep_heldout, domains=["terminal"], out=out,
                             concurrency=args.concurrency, progress=False)
    started = time.monotonic()
    summary = run_agent_predictions(config)
    print(render_text(summary))
    print(f"agent = scripted, imagining with the {args.model!r} world model; baselines from the same steps; "
          f"{time.monotonic() - started:.0f} s; run folder {out}")


if __name__ == "__main__":
    main()

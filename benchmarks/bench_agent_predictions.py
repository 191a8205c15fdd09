"""The agent's own prediction accuracy on the terminal's held-out tasks, with a world model as imagination.

What it measures: ``agentworld eval agent-predictions`` over the built-in terminal held-out tasks
(scenarios kept out of the shipped corpus), every action run for real in the sandboxed shell, with
an in-process scripted agent whose *imagination* is a world model: before each fixed action it asks
the world model (default: the offline ``retrieval`` backend over the shipped corpus, the held-out
tasks' own recordings left out of it as ``agentworld demo`` does; ``--keep-heldout`` keeps them) what
the action will show, given the real history it has seen, and answers with that prediction. Beside
it, from the same run, the trivial baselines the summary always carries: an empty prediction and
"repeat the previous observation".

Run (from the repository root; takes about a minute on a quiet machine)::

    PYTHONPATH=src python benchmarks/bench_agent_predictions.py [--out DIR] [--model retrieval]

The run folder is resumable; a second run with the same ``--out`` only prints the summary again.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from agentworld.endpoints import build_backend
from agentworld.eval.agentpred import AgentPredConfig, run_agent_predictions, select_tasks
from agentworld.eval.agentpred_prompt import (
    CLOSE,
    NEXT_ACTION,
    OBSERVATION,
    OPEN,
    SETUP,
    read_history,
    read_prediction,
)
from agentworld.eval.agentpred_summary import render_text
from agentworld.models.base import ChatBackend, ChatRequest, ChatResult
from agentworld.models.parsing import split_thinking
from agentworld.schema import OBSERVATION_MARKER, Message


class ImaginingAgent:
    """A scripted agent that predicts each observation by asking a world model (its imagination).

    It reads the episode back from its own conversation (:func:`read_history`): the initial
    observation, the setup and fixed actions, and the real observations it was shown, and sends the
    world model the AgentWorldBench-shaped request for the pending action.
    """

    def __init__(self, world_model: ChatBackend, system_prompt: str) -> None:
        self.world_model, self.system_prompt = world_model, system_prompt
        self.name = f"imagining:{world_model.name}"

    def world_request(self, messages: tuple[Message, ...]) -> ChatRequest:
        sections = read_history(messages)
        initial = sections[0][1]
        actions = [text for label, text in sections[1:] if label in (SETUP, NEXT_ACTION)]
        screens = [text for label, text in sections[1:] if label == OBSERVATION]
        actions[0] = f"**Current State:**\n{initial}\n\n{actions[0]}"
        out = [Message(role="system", content=self.system_prompt)]
        for action, screen in zip(actions, screens, strict=False):
            out += [Message(role="user", content=action),
                    Message(role="assistant", content=f"{OBSERVATION_MARKER}\n{screen}")]
        out.append(Message(role="user", content=actions[-1]))
        return ChatRequest(messages=tuple(out))

    async def complete(self, request: ChatRequest) -> ChatResult:
        answer = await self.world_model.complete(self.world_request(request.messages))
        imagined = split_thinking(answer.content, "predicted_observation")[0]
        observation = read_prediction(imagined) or imagined
        return ChatResult(content=f"{OPEN}\n{observation}\n{CLOSE}", source=self.name)


def world_model(name: str, held_out: set[str]) -> ChatBackend:
    """The imagination: the retrieval baseline with the held-out tasks' own recordings left out of its
    index (the shipped corpus holds them, as ``agentworld demo`` notes), or another backend by name."""
    if name != "retrieval":
        backend: ChatBackend = build_backend(name, domains=["terminal"])
        return backend
    from agentworld.models.retrieval import RetrievalBackend, RetrievalIndex, default_corpus

    index = RetrievalIndex(default_corpus(), exclude=lambda row: row.id.rpartition("-t")[0] in held_out)
    return RetrievalBackend(index)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="run folder (default: a temporary one)")
    parser.add_argument("--model", default="retrieval", help="world-model backend name used as imagination")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--keep-heldout", action="store_true",
                        help="leave the held-out tasks' recordings in the retrieval index (an upper bound)")
    args = parser.parse_args()
    from agentworld.domains import DOMAINS

    out = args.out or Path(tempfile.mkdtemp(prefix="bench-agentpred-")) / "run"
    name = f"imagining:{args.model}{'+heldout' * args.keep_heldout}"
    config = AgentPredConfig(agent_base_url="in-process", agent_model=name,
                             domains=["terminal"], out=out, concurrency=args.concurrency, progress=False)
    held_out = set() if args.keep_heldout else {t.id for t in select_tasks(config)}
    agent = ImaginingAgent(world_model(args.model, held_out), DOMAINS["terminal"].system_prompt)
    started = time.monotonic()
    summary = run_agent_predictions(config, agent=agent)
    print(render_text(summary))
    print(f"agent = scripted, imagining with the {args.model!r} world model; baselines from the same steps; "
          f"{time.monotonic() - started:.0f} s; run folder {out}")


if __name__ == "__main__":
    main()

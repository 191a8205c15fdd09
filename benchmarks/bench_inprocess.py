"""The in-process backend (``--model transformers:DIR``): concurrent requests batched vs one at a time.

What it measures: N greedy requests (the training demo's held-out terminal turns, repeated to N)
answered by :class:`agentworld.models.transformers_backend.TransformersBackend`, first one at a
time, then all at once (collected into batches of up to ``--batch`` rows); prints wall time,
generated tokens per second and the ratio, and checks the answers are the same (so both sides
generated the same tokens). The untrained tiny model never stops, so each row runs to ``--max-tokens``.

Run (from the repository root)::

    PYTHONPATH=src python benchmarks/bench_inprocess.py [--model DIR] [--n 16] [--batch 16] [--max-tokens 64]

Without ``--model`` it builds the training demo's untrained tiny model (2 layers, 64 wide) in a
temporary folder. On a GPU pass ``--device cuda``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from agentworld.models.base import ChatRequest
from agentworld.models.transformers_backend import TransformersBackend


def _model(folder: Path) -> Path:
    from agentworld.train import demo
    from agentworld.train.tiny import build_tiny

    return build_tiny(folder, corpus=demo._corpus_texts(), hidden_size=64, layers=2, vocab_size=2048,
                      stop_tags=[demo.TAG])


def _requests(n: int, max_tokens: int) -> list[ChatRequest]:
    from agentworld.corpus import corpus_path
    from agentworld.schema import load_samples

    samples = load_samples([corpus_path("terminal")])
    return [ChatRequest(messages=tuple(samples[i % len(samples)].messages()), max_tokens=max_tokens,
                        temperature=0) for i in range(n)]


async def _measure(backend: TransformersBackend, requests: list[ChatRequest]) -> dict[str, Any]:
    await backend.complete(requests[0])  # load the model, warm up
    t0 = time.perf_counter()
    alone = [await backend.complete(r) for r in requests]
    t1 = time.perf_counter()
    together = await asyncio.gather(*(backend.complete(r) for r in requests))
    t2 = time.perf_counter()
    tokens = sum(r.usage.completion_tokens for r in alone)
    return {"requests": len(requests), "tokens": tokens, "one_by_one_s": round(t1 - t0, 2),
            "batched_s": round(t2 - t1, 2), "one_by_one_tok_s": round(tokens / (t1 - t0), 1),
            "batched_tok_s": round(tokens / (t2 - t1), 1), "speedup": round((t1 - t0) / (t2 - t1), 2),
            "batch_sizes": backend.batch_sizes[1 + len(requests):],
            "same_answers": [r.content for r in alone] == [r.content for r in together]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, help="model folder (default: build the demo's tiny model)")
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.model or _model(Path(tmp) / "tiny")
        backend = TransformersBackend(folder, max_batch_size=args.batch, device=args.device)
        result = asyncio.run(_measure(backend, _requests(args.n, args.max_tokens)))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

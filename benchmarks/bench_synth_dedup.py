"""Near-duplicate search of ``agentworld synth check``: prefix-filtered index against every pair.

Builds ``--worlds`` synthetic scenarios (80 words from a 3,000-word vocabulary, 8 of 200 tool names;
a fifth are copies of an earlier one with one word changed), then finds the near-duplicates with
:func:`agentworld.synth.dedup.find_duplicates` and by comparing every world with every kept one,
and prints both times, their ratio and whether they agree.

    python benchmarks/bench_synth_dedup.py [--worlds 1000] [--threshold 0.9]
"""

from __future__ import annotations

import argparse
import random
import time

from agentworld.synth.dedup import Scenario, _dot, _vectors, find_duplicates, jaccard


def scenarios(n: int, seed: int = 0) -> list[Scenario]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(3000)]
    items: list[Scenario] = []
    for i in range(n):
        if i and rng.random() < 0.2:
            base = items[rng.randrange(len(items))]
            words = base.text.split()
            words[rng.randrange(len(words))] = rng.choice(vocab)
            items.append(Scenario(" ".join(words), base.tools))
        else:
            items.append(Scenario(" ".join(rng.choices(vocab, k=80)),
                                  frozenset(f"t{rng.randrange(200)}" for _ in range(8))))
    return items


def every_pair(items: list[Scenario], threshold: float, weight: float) -> list[tuple[int, int]]:
    vectors, kept, out = _vectors([s.text for s in items]), [], []
    for i, item in enumerate(items):
        best, top = None, -1.0
        for j in kept:
            score = weight * _dot(vectors[i], vectors[j]) + (1 - weight) * jaccard(item.tools, items[j].tools)
            if score >= threshold - 1e-9 and score > top:
                best, top = j, score
        if best is None:
            kept.append(i)
        else:
            out.append((i, best))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=1000)
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument("--text-weight", type=float, default=0.5)
    args = parser.parse_args()
    items = scenarios(args.worlds)
    start = time.perf_counter()
    fast = [(d.index, d.of) for d in find_duplicates(items, args.threshold, args.text_weight)]
    indexed = time.perf_counter() - start
    start = time.perf_counter()
    slow = every_pair(items, args.threshold, args.text_weight)
    brute = time.perf_counter() - start
    print(f"{args.worlds} worlds, {len(fast)} near-duplicates (threshold {args.threshold})")
    print(f"prefix-filtered index {indexed:8.2f} s")
    print(f"every pair            {brute:8.2f} s   ratio {brute / indexed:.1f}x   "
          f"same result: {fast == slow}")


if __name__ == "__main__":
    main()

"""GSPO learns a toy verifiable terminal task on CPU: the observation of ``echo <word>`` is the word.

A tiny model is first taught only the *format* (every prompt paired with every word, so it emits a
well-formed ``<predicted_observation>`` block holding a random word: chance-level reward). GSPO with
the rule reward (0/1 exact match on the strict prediction; a scripted judge adds its constant
rubric share in ``--reward hybrid``) must then raise the mean reward. Prints the mean reward of the
first and last step windows side by side and exits 1 if it did not rise.

    python benchmarks/bench_gspo.py [--steps 80] [--reward rule|hybrid]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from agentworld.models.scripted import ScriptedBackend
from agentworld.schema import BenchSample
from agentworld.train.rl import RLConfig, run_rl
from agentworld.train.tiny import build_tiny

WORDS = ["apple", "river", "stone", "cloud"]
TAG = "predicted_observation"
JUDGE = ('<final_evaluation>{"scores": {"format": 3, "factuality": 3, "consistency": 3, '
         '"realism": 3, "quality": 3}}</final_evaluation>')


def format_warm_start(folder: Path, steps: int = 60, lr: float = 1e-2) -> None:
    """Teach the output format only: each prompt is paired with every word (no prompt→word mapping)."""
    import torch
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    chats = [[{"role": "user", "content": f"echo {a}"},
              {"role": "assistant", "content": f"<{TAG}>{b}</{TAG}>"}]
             for a in WORDS for b in WORDS]
    texts = [tok.apply_chat_template(chat, tokenize=False) for chat in chats]
    batch = tok(texts, return_tensors="pt", padding=True)
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    torch.manual_seed(0)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    for _ in range(steps):
        model(**batch, labels=labels).loss.backward()
        opt.step()
        opt.zero_grad()
    model.save_pretrained(folder)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--reward", choices=["rule", "hybrid"], default="rule")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--window", type=int, default=3, help="generation logs per window")
    args = parser.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_tiny(Path(tmp) / "tiny", hidden_size=64)
        format_warm_start(model_dir)
        samples = [BenchSample(task="terminal", id=str(i), prompt=[f"echo {w}"], response=[w])
                   for i, w in enumerate(WORDS)]
        config = RLConfig(model=str(model_dir), output_dir=Path(tmp) / "out", reward=args.reward,
                          max_steps=args.steps, num_generations=8, per_device_train_batch_size=8,
                          max_completion_length=16, learning_rate=args.lr, use_cpu=True, save_final=False)
        result = run_rl(config, samples=samples, judge=ScriptedBackend(default=JUDGE))
    rewards = result.rewards
    w = max(1, min(args.window, len(rewards) // 2))
    first, last = sum(rewards[:w]) / w, sum(rewards[-w:]) / w
    print(f"GSPO toy echo task: {result.steps} steps, {len(rewards)} logged rewards, "
          f"{time.perf_counter() - start:.0f}s")
    print(f"{'window':<10}{'mean reward':>12}")
    print(f"{'first':<10}{first:>12.3f}")
    print(f"{'last':<10}{last:>12.3f}")
    print("per log:", " ".join(f"{r:.2f}" for r in rewards))
    if last <= first:
        print("FAIL: mean reward did not rise", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""GSPO learns a toy verifiable terminal task on CPU: the observation of ``echo <word>`` is the word.

A tiny model is first taught only the *format*: every prompt ``echo <a>`` is paired with every
answer ``<predicted_observation><b></predicted_observation>`` (no prompt→word mapping), so after
the warm-up it emits a well-formed block holding a uniformly random word of the set: chance-level
reward ``1 / len(WORDS)``. GSPO with the rule reward (0/1 exact match on the strict prediction; a
scripted judge adds its constant rubric share in ``--reward hybrid``) must then learn the copy
(the word is in the prompt) and raise the mean reward well above chance.

Toy settings (this benchmark only; the recipe defaults in :class:`RLConfig` stay REFERENCE §5's):

* ``WORDS`` are words the tiny tokenizer encodes as one token each, so a correct answer is a
  single token choice and 0/1 credit is not diluted over several sub-word tokens.
* ``steps_per_generation=1``: every optimizer step is on-policy (ratio 1 at the update), so the
  sequence-level clipping range never zeroes the gradient. The reference ``steps_per_generation=4``
  with ``epsilon=3e-4`` reuses each generation batch for 3 off-policy steps, on which a tiny model
  at a toy learning rate leaves the ±3e-4 trust region after the first step: those steps carry no
  gradient and only add noise. ``--epsilon``/``--epsilon-high`` are exposed (default 0.2/0.28)
  for runs with ``--steps-per-generation`` > 1.
* learning rate 1.5e-3 (2e-3 collapsed the format on one seed; >=3e-3 collapses), temperature 1.0,
  ``num_generations=8`` and 2 prompts (16 completions) per step.

Importance sampling stays sequence-level (GSPO). Prints the mean reward of the first and last
step windows side by side, the whole per-step curve, and exits 1 unless
``last >= first + margin`` and ``last >= min_last`` (defaults 0.2 and 0.5).

Measured on 2 CPU cores (300 steps, lr 1.5e-3, ~15 s of RL after the warm-up): mean reward of the
first vs last 8 steps 0.148 -> 0.734 (seed 1) and 0.180 -> 0.719 (seed 0); chance is 0.25. With
70-120 steps the curve rises but ends below 0.5 (0.15 -> 0.43 at 120 steps), and learning rates
of 3e-3 and above lose the output format within a few steps.

    python benchmarks/bench_gspo.py [--steps 300] [--reward rule|hybrid] [--lr 1.5e-3] [--seed 0]
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

WORDS = ["root", "search", "weather", "host"]
"""Single-token words in the tiny tokenizer (``build_tiny``'s default corpus)."""
TAG = "predicted_observation"
JUDGE = ('<final_evaluation>{"scores": {"format": 3, "factuality": 3, "consistency": 3, '
         '"realism": 3, "quality": 3}}</final_evaluation>')


def format_warm_start(folder: Path, steps: int = 60, lr: float = 1e-2, seed: int = 0) -> None:
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
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    for _ in range(steps):
        model(**batch, labels=labels).loss.backward()
        opt.step()
        opt.zero_grad()
    model.save_pretrained(folder)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--reward", choices=["rule", "hybrid"], default="rule")
    parser.add_argument("--lr", type=float, default=1.5e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup-steps", type=int, default=60)
    parser.add_argument("--prompts-per-step", type=int, default=2)
    parser.add_argument("--steps-per-generation", type=int, default=1)
    parser.add_argument("--epsilon", type=float, default=0.2)
    parser.add_argument("--epsilon-high", type=float, default=0.28)
    parser.add_argument("--window", type=int, default=8, help="logged steps per window")
    parser.add_argument("--margin", type=float, default=0.2, help="required last - first")
    parser.add_argument("--min-last", type=float, default=0.5, help="required last-window mean")
    args = parser.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_tiny(Path(tmp) / "tiny", hidden_size=64, seed=args.seed)
        format_warm_start(model_dir, steps=args.warmup_steps, seed=args.seed)
        samples = [BenchSample(task="terminal", id=str(i), prompt=[f"echo {w}"], response=[w])
                   for i, w in enumerate(WORDS)]
        config = RLConfig(model=str(model_dir), output_dir=Path(tmp) / "out", reward=args.reward,
                          max_steps=args.steps, num_generations=8,
                          per_device_train_batch_size=8 * args.prompts_per_step,
                          steps_per_generation=args.steps_per_generation, epsilon=args.epsilon,
                          epsilon_high=args.epsilon_high, temperature=1.0, max_completion_length=16,
                          learning_rate=args.lr, seed=args.seed, use_cpu=True, save_final=False)
        result = run_rl(config, samples=samples, judge=ScriptedBackend(default=JUDGE))
    rewards = result.rewards
    w = max(1, min(args.window, len(rewards) // 2))
    first, last = sum(rewards[:w]) / w, sum(rewards[-w:]) / w
    chance = 1 / len(WORDS)
    print(f"GSPO toy echo task: {result.steps} steps, {len(rewards)} logged rewards, lr {args.lr:g}, "
          f"seed {args.seed}, reward {args.reward}, {time.perf_counter() - start:.0f}s")
    print(f"{'window':<22}{'first':>8}{'last':>8}{'delta':>8}")
    print(f"{f'mean reward ({w} steps)':<22}{first:>8.3f}{last:>8.3f}{last - first:>+8.3f}")
    print(f"chance (rule part) {chance:.2f}; required: last >= first + {args.margin:g} "
          f"and last >= {args.min_last:g}")
    print("per step:", " ".join(f"{r:.2f}" for r in rewards))
    if last < first + args.margin or last < args.min_last:
        print("FAIL: mean reward did not rise by the required margin", file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())

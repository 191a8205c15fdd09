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
* The response tags are single tokens and generation stops at ``</predicted_observation>``
  (``build_tiny(stop_tags=...)``, as a serving stack stops at a stop string), and completions are
  limited to 3 tokens, exactly one answer: every token the model emits is scored, so none can
  drift unpunished.
* The warm-up puts its loss on the answer tokens only, runs to its loss floor (150 full-batch
  steps), and is checked by sampling like the RL run before any RL step (``--min-format``).
* ``steps_per_generation=1``: every optimizer step is on-policy (ratio 1 at the update), so the
  sequence-level clipping range never zeroes the gradient. The reference ``steps_per_generation=4``
  with ``epsilon=3e-4`` reuses each generation batch for 3 off-policy steps, on which a tiny model
  at a toy learning rate leaves the ±3e-4 trust region after the first step: those steps carry no
  gradient and only add noise. ``--epsilon``/``--epsilon-high`` are exposed (default 0.2/0.28)
  for runs with ``--steps-per-generation`` > 1.
* learning rate 1.5e-3, temperature 1.0, ``num_generations=16`` and all 4 prompts (64
  completions) per step.
* one torch thread and every seed fixed: a seed gives the same curve on any machine with these
  versions (1 and 2 threads gave bit-identical curves on a 2-core machine; 2 threads took 4x the
  CPU time there because the machine was shared).

What made the earlier recipe (60 warm-up steps with the loss on the prompt too, 16-token limit,
8 completions x 2 prompts per step) fail on some seeds, each found by logging completions:

1. the warm-up did not hold the format: 50-86% of sampled completions were well formed (seed 0:
   50%), so the first RL steps already had mostly zero rewards;
2. tokens that earn no reward drift: the end-of-turn token after the closing tag (the model then
   ran on to the 16-token limit; 88-100% clipped by step 25 on seed 0), then a newline before the
   opening tag (seed 0 at step 38, all 16 tokens newlines from then on). An all-zero group has no
   advantage, so nothing pulls the model back;
3. 16 completions per step from 2 of the 4 prompts is a noisy gradient: on seed 3 (with 1. and 2.
   fixed) the closing tag gave way to a second word within 3 steps (step 31) and never came back.

Some seeds still end on a plateau near 0.75: the tiny model tells three of the words apart and
keeps mixing up the fourth with another (per-prompt rewards logged on seed 0 showed ``host`` vs
``search`` at about 60/40); the margin is met either way.

Importance sampling stays sequence-level (GSPO). Prints the warm-up check, the mean reward of the
first and last step windows side by side, the whole per-step curve, and exits 1 unless
``last >= first + margin`` and ``last >= min_last`` (defaults 0.2 and 0.5).

Measured on a shared 2-core machine (300 steps; about 75 s of CPU, 2-3 min wall under load),
mean reward of the first vs last 8 steps (chance 0.25):

    seed 0: 0.244 -> 0.982    seed 1: 0.236 -> 0.920    seed 2: 0.236 -> 0.979
    seed 3: 0.232 -> 0.779    seed 4: 0.283 -> 0.762    seed 5: 0.242 -> 0.736    seed 6: 0.221 -> 0.742

    python benchmarks/bench_gspo.py [--seed 0] [--steps 300] [--lr 1.5e-3] [--reward rule|hybrid]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import torch
import transformers

from agentworld.models.scripted import ScriptedBackend
from agentworld.schema import BenchSample
from agentworld.train.rl import RLConfig, run_rl
from agentworld.train.tiny import build_tiny

WORDS = ["root", "search", "weather", "host"]
"""Single-token words in the tiny tokenizer (``build_tiny``'s default corpus)."""
TAG = "predicted_observation"
TEMPERATURE = 1.0
MAX_TOKENS = 3
"""``<predicted_observation>``, the word, ``</predicted_observation>``: one token each."""
JUDGE = ('<final_evaluation>{"scores": {"format": 3, "factuality": 3, "consistency": 3, '
         '"realism": 3, "quality": 3}}</final_evaluation>')


def format_warm_start(folder: Path, steps: int = 150, lr: float = 1e-2, seed: int = 0) -> tuple[float, float]:
    """Teach the output format only: each prompt is paired with every word (no prompt→word mapping).

    The loss is on the answer tokens only (a loss over the prompt too is dominated by the easy
    prompt tokens, and 60 such steps left 10-50% of sampled completions malformed); the full batch
    converges to its floor, ``ln 4`` on the word token spread over the answer tokens. Returns the last
    loss and that floor.
    """
    import torch
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    pairs = [(a, b) for a in WORDS for b in WORDS]
    prompts = [tok.apply_chat_template([{"role": "user", "content": f"echo {a}"}], tokenize=False,
                                       add_generation_prompt=True) for a, _ in pairs]
    chats = [[{"role": "user", "content": f"echo {a}"},
              {"role": "assistant", "content": f"<{TAG}>{b}</{TAG}>"}] for a, b in pairs]
    texts = [tok.apply_chat_template(chat, tokenize=False) for chat in chats]
    batch = tok(texts, return_tensors="pt", padding=True)
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    for i, prompt in enumerate(prompts):
        labels[i, :len(tok(prompt)["input_ids"])] = -100
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    loss = torch.tensor(float("nan"))
    for _ in range(steps):
        loss = model(**batch, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    model.save_pretrained(folder)
    floor = math.log(len(WORDS)) * len(pairs) / int((labels != -100).sum())
    return float(loss.detach()), floor


def sample_check(folder: Path, *, temperature: float, max_new_tokens: int, per_prompt: int = 64,
                 seed: int = 0) -> tuple[float, float]:
    """Sample like the RL run does (same temperature, no top-k/top-p, same token limit and stop tokens).

    Returns ``(format_rate, reward)``: the share of completions with a well-formed block and the
    mean rule reward, before any RL step. A warm-up that does not hold the format shows here
    instead of as an RL curve stuck at 0.
    """
    import torch
    import transformers

    from agentworld.train.rewards import RuleReward, strict_prediction

    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    model.eval()
    torch.manual_seed(seed)
    reward, formatted, total = RuleReward(tag=TAG), 0, 0.0
    n = 0
    for word in WORDS:
        ids = tok.apply_chat_template([{"role": "user", "content": f"echo {word}"}],
                                      add_generation_prompt=True, return_tensors="pt", return_dict=True)
        with torch.no_grad():
            out = model.generate(**ids, do_sample=True, temperature=temperature, top_k=0, top_p=1.0,
                                 max_new_tokens=max_new_tokens, num_return_sequences=per_prompt,
                                 pad_token_id=tok.pad_token_id)
        for row in out:
            text = tok.decode(row[ids["input_ids"].shape[1]:], skip_special_tokens=True)
            formatted += strict_prediction(text, TAG) is not None
            total += reward.score(text, word, "terminal", f"echo {word}")
            n += 1
    return formatted / n, total / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--reward", choices=["rule", "hybrid"], default="rule")
    parser.add_argument("--lr", type=float, default=1.5e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup-steps", type=int, default=150)
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS, help="completion token limit")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads (pinned: other counts change float reductions)")
    parser.add_argument("--min-format", type=float, default=0.9,
                        help="required share of well-formed samples after the warm-up")
    parser.add_argument("--prompts-per-step", type=int, default=len(WORDS))
    parser.add_argument("--num-generations", type=int, default=16, help="completions per prompt (GRPO group)")
    parser.add_argument("--steps-per-generation", type=int, default=1)
    parser.add_argument("--epsilon", type=float, default=0.2)
    parser.add_argument("--epsilon-high", type=float, default=0.28)
    parser.add_argument("--window", type=int, default=8, help="logged steps per window")
    parser.add_argument("--margin", type=float, default=0.2, help="required last - first")
    parser.add_argument("--min-last", type=float, default=0.5, help="required last-window mean")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    transformers.set_seed(args.seed)
    start, cpu_start = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_tiny(Path(tmp) / "tiny", hidden_size=64, seed=args.seed, stop_tags=[TAG])
        warm_loss, floor = format_warm_start(model_dir, steps=args.warmup_steps, seed=args.seed)
        fmt, warm_reward = sample_check(model_dir, temperature=TEMPERATURE, max_new_tokens=args.max_tokens,
                                        seed=args.seed)
        print(f"warm-up: {args.warmup_steps} steps, loss {warm_loss:.3f} (floor {floor:.3f}); sampled: "
              f"{fmt:.0%} well-formed, reward {warm_reward:.3f}")
        if fmt < args.min_format:
            print(f"FAIL: the warm-up did not hold the format ({fmt:.0%} < {args.min_format:.0%})",
                  file=sys.stderr)
            return 1
        samples = [BenchSample(task="terminal", id=str(i), prompt=[f"echo {w}"], response=[w])
                   for i, w in enumerate(WORDS)]
        config = RLConfig(model=str(model_dir), output_dir=Path(tmp) / "out", reward=args.reward,
                          max_steps=args.steps, num_generations=args.num_generations,
                          per_device_train_batch_size=args.num_generations * args.prompts_per_step,
                          steps_per_generation=args.steps_per_generation, epsilon=args.epsilon,
                          epsilon_high=args.epsilon_high, temperature=TEMPERATURE,
                          max_completion_length=args.max_tokens, learning_rate=args.lr, seed=args.seed,
                          use_cpu=True, save_final=False)
        result = run_rl(config, samples=samples, judge=ScriptedBackend(default=JUDGE))
    rewards = result.rewards
    w = max(1, min(args.window, len(rewards) // 2))
    first, last = sum(rewards[:w]) / w, sum(rewards[-w:]) / w
    chance = 1 / len(WORDS)
    print(f"GSPO toy echo task: {result.steps} steps, {len(rewards)} logged rewards, lr {args.lr:g}, "
          f"seed {args.seed}, reward {args.reward}, {time.perf_counter() - start:.0f} s wall, "
          f"{time.process_time() - cpu_start:.0f} s CPU")
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

"""Contradiction rate of simulated terminal sessions with and without the state ledger.

Replays every trajectory of the shipped corpus of real recordings (``agentworld.corpus``) through
``agentworld.sim.Simulator`` with the real actions. The world model is scripted: it answers each
turn with the real observation, but on an eligible turn, with probability ``--rate``, it first makes
one known consistency error (prompt with a wrong cwd, a changed host, altered content of a file the
session wrote, a wrong value for ``echo $X``). Asked again with the conflict named, it answers
correctly with probability ``--fix-p``, else repeats the error. Decisions are seeded per trajectory
and turn, so both runs see the same errors.

The oracle is the real recording: an injected error *survived* when the final observation of that
turn still differs from the real one. Prints turns, injected errors, survivors, the rate (survivors
per turn) without and with the ledger, the relative reduction, re-asks, repairs and damaged turns
(a turn without an injected error whose observation the ledger changed). Exits 1 if the ledger does
not lower the rate or damages a turn.

    python benchmarks/bench_ledger.py [--rate 0.3] [--fix-p 0.5] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import fmean

from agentworld.corpus import corpus_path
from agentworld.domains.actions import PROMPT_RE, terminal_state
from agentworld.eval.rules.scores import score_rules
from agentworld.models.base import ChatRequest
from agentworld.models.scripted import ScriptedBackend
from agentworld.schema import OBSERVATION_MARKER, BenchSample, read_bench_jsonl
from agentworld.sim import Simulator, WorldSpec

Injector = Callable[[str, random.Random], str | None]


def _prompt_lines(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if PROMPT_RE.match(line)]


def wrong_cwd(obs: str, rng: random.Random) -> str | None:
    """The final prompt shows another directory (what a model that forgot a ``cd`` does)."""
    lines = obs.splitlines()
    m = PROMPT_RE.match(lines[-1]) if lines else None
    if not m or m.group("cmd") is not None:
        return None
    other = rng.choice([d for d in ("/app", "/", "/tmp", "/root", "/app/src") if d != m.group("cwd")])
    lines[-1] = f"{m.group('user')}@{m.group('host')}:{other}{m.group('sigil')}"
    return "\n".join(lines)


def changed_host(obs: str, rng: random.Random) -> str | None:
    """Every prompt shows another container id."""
    lines = obs.splitlines()
    found = _prompt_lines(lines)
    if not found:
        return None
    m = PROMPT_RE.match(lines[found[0]])
    assert m is not None
    other = "".join(rng.choice("0123456789abcdef") for _ in range(12))
    return "\n".join(line.replace(f"@{m.group('host')}:", f"@{other}:") for line in lines)


def altered_output(obs: str, rng: random.Random) -> str | None:
    """One output line between the command and the final prompt is changed."""
    lines = obs.splitlines()
    body = [i for i in range(1, len(lines) - 1) if lines[i].strip()]
    if len(lines) < 3 or not body:
        return None
    i = rng.choice(body)
    edit = rng.choice([" (edited)", "2", "_old"])
    lines[i] = lines[i] + edit if rng.random() < 0.5 else lines[i][::-1] + "x"
    return "\n".join(lines)


def injectors(keys: str, earlier: str) -> dict[str, Injector]:
    """The errors that fit a turn: file errors need a read of a file an earlier action named."""
    out: dict[str, Injector] = {"cwd": wrong_cwd, "host": changed_host}
    m = re.match(r"\s*(?:cat|head|tail)\b[^|;&>]*?(\S+)\s*$", keys)
    if m and m.group(1).rsplit("/", 1)[-1] in earlier:
        out["file"] = altered_output
    if re.match(r"\s*echo\b[^|;&>]*\$", keys):
        out["env"] = altered_output
    return out


@dataclass
class Turn:
    real: str
    wrong: str | None
    kind: str | None
    seed: str


@dataclass
class Tally:
    turns: int = 0
    injected: int = 0
    survived: int = 0
    reasks: int = 0
    repairs: int = 0
    flagged: int = 0
    damaged: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    survived_kinds: Counter[str] = field(default_factory=Counter)
    rules: list[float] = field(default_factory=list)
    """Rule-tier overall of each final observation against the real one (the evaluation's scoring)."""


def plan(rows_prompt: list[str], rows_response: list[str], traj: str, seed: int, rate: float) -> list[Turn]:
    """Which turns get which error (a content error where one fits); the same for both runs."""
    turns, earlier = [], ""
    for j, (action, response) in enumerate(zip(rows_prompt, rows_response, strict=True)):
        real = response.replace(OBSERVATION_MARKER, "", 1).strip("\n").rstrip()
        keys = "".join(str(s["keystrokes"]) for s in _steps(action))
        rng = random.Random(f"{seed}:{traj}:{j}")
        options = injectors(keys, earlier)
        wrong, kind = None, None
        if rng.random() < rate:
            content = sorted(set(options) - {"cwd", "host"})
            kind = rng.choice(content or sorted(options))
            wrong = options[kind](real, rng)
            kind = kind if wrong not in (None, real) else None
            wrong = wrong if kind else None
        turns.append(Turn(real, wrong, kind, f"{seed}:{traj}:{j}"))
        earlier += keys
    return turns


def _steps(action: str) -> list[dict[str, object]]:
    body = action.split("**Action:**", 1)[1].strip().removeprefix("```json").removesuffix("```")
    steps = json.loads(body)
    return steps if isinstance(steps, list) else [steps]


def wrap(text: str) -> str:
    return f"<predicted_observation>\n{OBSERVATION_MARKER}\n{text}\n</predicted_observation>"


class ErrorProneModel:
    """Answers with the planned turn: the error first, then the truth with probability ``fix_p``."""

    def __init__(self, fix_p: float) -> None:
        self.fix_p = fix_p
        self.turn: Turn | None = None
        self.asks = 0

    def reply(self, request: ChatRequest) -> str:
        assert self.turn is not None
        last = request.messages[-1].content
        reask = not (last.startswith("**Action:**") or last.startswith("**Current State:**"))
        self.asks += 1
        if self.turn.wrong is None:
            return wrap(self.turn.real)
        if not reask:
            return wrap(self.turn.wrong)
        rng = random.Random(f"{self.turn.seed}:reask:{self.asks}")
        return wrap(self.turn.real if rng.random() < self.fix_p else self.turn.wrong)


def run(trajectories: list[tuple[str, list[str], list[str]]], ledger: bool, seed: int, rate: float,
        fix_p: float) -> Tally:
    tally = Tally()
    for traj, prompts, responses in trajectories:
        turns = plan(prompts, responses, traj, seed, rate)
        script = ErrorProneModel(fix_p)
        model = ScriptedBackend(default=script.reply)
        screen = terminal_state(prompts[0])
        sim = Simulator(model, ledger=ledger, max_reasks=1)
        sim.reset(WorldSpec(domain="terminal", name=traj, initial_state=screen or ""), seed=seed)
        for k, (turn, action) in enumerate(zip(turns, prompts, strict=True)):
            script.turn, script.asks = turn, 0
            result = sim.step(_steps(action))
            sample = BenchSample(task="terminal", id=f"{traj}-t{k + 1}", prompt=prompts[:k + 1],
                                 response=responses[:k + 1], turn_idx=k + 1)
            tally.rules.append(score_rules("terminal", result.observation, turn.real, sample).overall)
            tally.turns += 1
            tally.reasks += max(0, script.asks - 1)
            tally.repairs += int(result.repaired)
            tally.flagged += int(bool(result.contradictions))
            wrong = result.observation.rstrip() != turn.real
            if turn.kind:
                tally.injected += 1
                tally.kinds[turn.kind] += 1
                tally.survived += int(wrong)
                tally.survived_kinds[turn.kind] += int(wrong)
            else:
                tally.damaged += int(wrong)
        sim.close()
    return tally


def load() -> list[tuple[str, list[str], list[str]]]:
    rows = [r for r in read_bench_jsonl(corpus_path("terminal")) if r.turn_idx == len(r.prompt)]
    return [(r.id.rsplit("-t", 1)[0], r.prompt, r.response) for r in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=0.3, help="error probability per eligible turn")
    parser.add_argument("--fix-p", type=float, default=0.5, help="chance a re-ask is answered correctly")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    data = load()
    off = run(data, False, args.seed, args.rate, args.fix_p)
    on = run(data, True, args.seed, args.rate, args.fix_p)
    rate_off, rate_on = off.survived / off.turns, on.survived / on.turns
    print(f"{len(data)} real trajectories, error rate {args.rate}, re-ask fix probability {args.fix_p}")
    print(f"{'':28}{'no ledger':>12}{'ledger':>12}")
    for label, a, b in [("turns", off.turns, on.turns), ("injected errors", off.injected, on.injected),
                        ("surviving contradictions", off.survived, on.survived),
                        ("re-asks", off.reasks, on.reasks),
                        ("repaired observations", off.repairs, on.repairs),
                        ("turns flagged", off.flagged, on.flagged),
                        ("damaged clean turns", off.damaged, on.damaged)]:
        print(f"{label:28}{a:>12}{b:>12}")
    print(f"{'contradiction rate / turn':28}{rate_off:>12.4f}{rate_on:>12.4f}")
    print(f"{'rule tier (mean overall)':28}{fmean(off.rules):>12.2f}{fmean(on.rules):>12.2f}")
    for kind in sorted(off.kinds):
        print(f"  survived {kind:17}{off.survived_kinds[kind]:>6}/{off.kinds[kind]:<5}"
              f"{on.survived_kinds[kind]:>6}/{on.kinds[kind]:<5}")
    reduction = 1 - rate_on / rate_off if rate_off else 0.0
    print(f"relative reduction: {reduction:.1%}")
    return 0 if rate_on < rate_off and on.damaged == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

"""Scoring one task under one arm of ``eval closed-loop``, and the summary per domain and arm.

Per-step fidelity compares each observation the simulator showed with what the real environment
returns *for the same action*: up to the first divergence that is the real episode itself; once the
agent's actions differ, the real environment is re-run on the simulator's actions (a fresh one, the
same setup), so every simulated step has its real counterpart. The scores are the rule tier's
(:func:`agentworld.eval.rules.scores.score_rules`, the step as an AgentWorldBench row with the real history)
and, with a judge, the rubric's total.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from statistics import fmean
from typing import Any

from agentworld.domains.hooks import domain_actions
from agentworld.eval.closedloop.episode import Trajectory
from agentworld.eval.closedloop.tasks import ClosedLoopTask
from agentworld.eval.rules.scores import score_rules
from agentworld.report_style import text_table
from agentworld.schema import BenchSample


def first_divergence(real: Trajectory, sim: Trajectory) -> int | None:
    """The first agent turn (1-based) whose actions differ or where only one episode went on (None: never)."""
    ours, theirs = [s.action for s in real.steps], [s.action for s in sim.steps]
    for turn, (a, b) in enumerate(zip(ours, theirs, strict=False), 1):
        if a != b:
            return turn
    return None if len(ours) == len(theirs) else min(len(ours), len(theirs)) + 1


def step_pairs(task: ClosedLoopTask, sim: Trajectory, truth: Trajectory) -> list[dict[str, Any]]:
    """Each simulated step (and the check) beside the real observation of the same action, as a row.

    ``truth`` is the real environment run on the simulator's actions (the real episode when they
    did not diverge); the row's history is the real one.
    """
    actions = domain_actions(task.domain)
    raws = list(task.setup) + [s.raw for s in truth.steps]
    texts = [text for text, _ in truth.setup] + [s.action for s in truth.steps]
    seen = [obs for _, obs in truth.setup] + [s.observation for s in truth.steps]
    if raws and actions.initial_in_action:
        texts[0] = actions.render(actions.parse(raws[0]), truth.initial)
    pairs = []
    offset = len(truth.setup)
    shown = [s.observation for s in sim.steps] + ([sim.check] if sim.check is not None else [])
    for k, simulated in enumerate(shown):
        if k < len(sim.steps):
            if k >= len(truth.steps):
                break
            prompt, response = texts[:offset + k + 1], seen[:offset + k + 1]
            label = str(k + 1)
        else:
            if truth.check is None:
                break
            first = truth.initial if actions.initial_in_action and not texts else None
            check_text = actions.render(actions.parse(task.check), first)
            prompt, response, label = [*texts, check_text], [*seen, truth.check], "check"
        sample = BenchSample(task=task.domain, id=f"{task.id}-{label}", prompt=prompt, response=response,
                             turn_idx=len(prompt))
        pairs.append({"turn": label, "sample": sample, "simulated": simulated, "real": response[-1]})
    return pairs


def score_pairs(domain: str, pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rule tier's overall and exact per pair (the samples are dropped: rows are journaled)."""
    out = []
    for pair in pairs:
        rule = score_rules(domain, pair["simulated"], pair["real"], pair["sample"])
        out.append({"turn": pair["turn"], "action": pair["sample"].action, "simulated": pair["simulated"],
                    "real": pair["real"], "rule": rule.overall, "exact": rule.exact,
                    "rubric": pair.get("rubric")})
    return out


def task_row(task: ClosedLoopTask, arm: str, real: Trajectory, sim: Trajectory,
             steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The journal row of one task under one arm."""
    rubric = [s["rubric"] for s in steps if s.get("rubric") is not None]
    return {"task": task.id, "domain": task.domain, "arm": arm,
            "first_divergence": first_divergence(real, sim),
            "real_success": real.success, "sim_success": sim.success, "agree": real.success == sim.success,
            "fidelity": round(fmean(s["rule"] for s in steps), 2) if steps else None,
            "rubric": round(fmean(rubric), 2) if rubric else None,
            "real_steps": len(real.steps), "sim_steps": len(sim.steps),
            "real_routed": sim.extra.get("real_routed", 0), "sim_ended": sim.ended, "steps": steps,
            "sim": sim.to_json()}


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return round(fmean(kept), 2) if kept else None


def summarize(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per domain and arm (in the rows' order; ``all`` last): outcome agreement, divergence, step
    fidelity (rule, rubric), successes."""
    rows = list(rows)
    arms = list(dict.fromkeys(row["arm"] for row in rows))
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["domain"], row["arm"])].append(row)
        groups[("all", row["arm"])].append(row)
    out: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    domains = [*sorted({domain for domain, _ in groups} - {"all"}), "all"]
    keys = [(domain, arm) for domain in domains for arm in arms if (domain, arm) in groups]
    for domain, arm in keys:
        group = groups[(domain, arm)]
        steps = [s for r in group for s in r["steps"]]
        diverged = [r["first_divergence"] for r in group if r["first_divergence"] is not None]
        sim_steps = sum(r["sim_steps"] for r in group)
        out[domain][arm] = {
            "tasks": len(group),
            "outcome_agreement": round(100 * sum(r["agree"] for r in group) / len(group), 1),
            "diverged": len(diverged), "first_divergence_mean": _mean(diverged),
            "steps_compared": len(steps), "rule_fidelity": _mean(s["rule"] for s in steps),
            "exact": round(100 * sum(s["exact"] for s in steps) / len(steps), 1) if steps else None,
            "rubric_fidelity": _mean(s.get("rubric") for s in steps),
            "real_success": sum(r["real_success"] for r in group),
            "sim_success": sum(r["sim_success"] for r in group),
            "real_routed_share": round(100 * sum(r["real_routed"] for r in group) / sim_steps, 1)
            if sim_steps else 0.0,
        }
    return dict(out)


COLUMNS = (("Domain", "domain"), ("Arm", "arm"), ("Tasks", "tasks"), ("Agree%", "outcome_agreement"),
           ("Diverged", "diverged"), ("1stDiv", "first_divergence_mean"), ("Steps", "steps_compared"),
           ("Rule", "rule_fidelity"), ("Exact%", "exact"), ("Rubric", "rubric_fidelity"),
           ("RealOK", "real_success"), ("SimOK", "sim_success"), ("Routed%", "real_routed_share"))


def table_rows(summary: dict[str, dict[str, dict[str, Any]]]) -> list[list[str]]:
    """The summary as table cells (``-`` where a figure does not apply)."""
    rows = []
    for domain, arms in summary.items():
        for arm, line in arms.items():
            cells = {"domain": domain, "arm": arm, **line}
            rows.append(["-" if cells[key] is None else str(cells[key]) for _, key in COLUMNS])
    return rows


def render_text(summary: dict[str, dict[str, dict[str, Any]]]) -> str:
    """A fixed-width table of the summary."""
    return "\n".join(text_table([name for name, _ in COLUMNS], table_rows(summary), left=2))

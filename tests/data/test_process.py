"""Processing steps: expansion, retry-cycle skipping, no-change filtering, dedup, split, bench rows."""

from __future__ import annotations

from agentworld.data.process import (
    DatasetStats,
    DatasetTally,
    StepCounter,
    dedup,
    drop_no_change,
    expand,
    gui_domains,
    samples_to_bench_rows,
    skip_retry_cycles,
    split_by_source,
)
from agentworld.data.types import LossMask, TurnStats
from agentworld.domains.base import DomainPlugin, register_domain, unregister_domain
from agentworld.schema import Trajectory, Turn

MARK = "**Environment Observation:**\n"


def _act(cmd: str) -> str:
    return f'**Action:**\n```json\n[{{"keystrokes": "{cmd}\\n", "duration": 0.5}}]\n```'


def _traj(pairs: list[tuple[str, str]], domain: str = "terminal", tid: str = "t",
          source: str = "s") -> Trajectory:
    return Trajectory(id=tid, domain=domain, system_prompt="SYS", meta={"source": source, "k": 1},
                      turns=tuple(Turn(action=a, observation=MARK + o, meta={"n": i})
                                  for i, (a, o) in enumerate(pairs, start=1)))


def test_expand_conditions_each_turn_on_everything_before_it() -> None:
    traj = _traj([("a1", "o1"), ("a2", "o2"), ("a3", "o3")])
    stats = StepCounter("expand")
    samples = list(expand([traj], stats))
    assert [s.id for s in samples] == ["t-t1", "t-t2", "t-t3"]
    assert samples[2].history == [("a1", MARK + "o1"), ("a2", MARK + "o2")]
    assert (samples[2].action, samples[2].observation, samples[2].total_turns) == ("a3", MARK + "o3", 3)
    assert samples[1].source == "s" and samples[1].meta == {"n": 2, "trajectory": {"k": 1}}
    assert (stats.inputs, stats.outputs) == (1, 3)


def test_retry_cycle_keeps_only_the_last_attempt() -> None:
    # install fails twice with an error and is retried verbatim (whitespace differs once), then works.
    install = _act("pip install foo")
    traj = _traj([
        (install, "Error: network unreachable"),
        (install.replace('"duration": 0.5', '"duration":   0.5'), "Error: network unreachable"),
        (install, "Successfully installed foo"),
        (_act("ls"), "a b"),
        (_act("ls"), "a b"),                               # a repeat without an error is not a cycle
        (_act("cat x"), "cat: x: No such file or directory"),
        (_act("cat y"), "y"),                              # an edited retry is not a cycle either
    ])
    stats = StepCounter("skip_retry_cycles")
    (out,) = skip_retry_cycles([traj], stats)
    assert [t.meta["n"] for t in out.turns] == [3, 4, 5, 6, 7]
    assert out.meta["cleaned"] == {"retry_cycles": 2}
    assert stats.details == {"turns_in": 7, "turns_dropped": 2, "trajectories_changed": 1}
    first = next(iter(expand([out])))
    assert first.observation == MARK + "Successfully installed foo" and first.history == []


def test_retry_cycle_of_only_failures_keeps_the_last_failure() -> None:
    cmd = _act("mytool")
    (out,) = skip_retry_cycles([_traj([(cmd, "bash: mytool: command not found")] * 3)])
    assert len(out.turns) == 1


def test_no_change_turns_are_dropped_in_gui_domains_only() -> None:
    pairs = [("click A", "page A"), ("click B", "page A "), ("click B", "page B"), ("wait", "page B")]
    stats = StepCounter("drop_no_change")
    (web,) = drop_no_change([_traj(pairs, domain="web")], stats)
    assert [t.action for t in web.turns] == ["click A", "click B"]
    assert [t.observation for t in web.turns] == [MARK + "page A", MARK + "page B"]
    assert stats.details["turns_dropped"] == 2
    (term,) = drop_no_change([_traj(pairs)])
    assert len(term.turns) == 4
    assert gui_domains() == {"android", "web", "os"}


def test_a_domain_is_a_gui_one_by_its_plugin() -> None:
    """``drop_no_change`` asks the plugins (``gui``), so a registered GUI domain needs no other change."""
    pairs = [("tap A", "screen A"), ("tap B", "screen A"), ("tap B", "screen B")]
    register_domain(DomainPlugin(name="kiosk", display="Kiosk", gui=True, package="agentworld.domains.os"))
    try:
        (kiosk,) = drop_no_change([_traj(pairs, domain="kiosk")])
    finally:
        unregister_domain("kiosk")
    assert [t.action for t in kiosk.turns] == ["tap A", "tap B"]
    (kept,) = drop_no_change([_traj(pairs, domain="kiosk")])
    assert len(kept.turns) == 3


def test_dedup_drops_exact_repeats_only() -> None:
    a = _traj([("a1", "o1"), ("a2", "o2")], tid="a")
    b = _traj([("a1", "o1"), ("a2", "other")], tid="b")
    stats = StepCounter("dedup")
    kept = list(dedup(expand([a, b, a]), stats))
    assert [s.id for s in kept] == ["a-t1", "a-t2", "b-t2"]
    assert (stats.inputs, stats.outputs, stats.dropped) == (6, 3, 3)


def test_split_keeps_a_source_on_one_side_and_is_stable() -> None:
    trajs = [_traj([("a", "o"), ("b", "p")], tid=f"t{i}", source=f"file{i % 20}.jsonl") for i in range(100)]
    samples = list(split_by_source(expand(trajs), eval_fraction=0.3, seed=7))
    sides: dict[str, set[str | None]] = {}
    for s in samples:
        sides.setdefault(s.source, set()).add(s.split)
    assert all(len(v) == 1 for v in sides.values())
    evals = sum(1 for v in sides.values() if v == {"eval"})
    assert 1 <= evals <= 12
    again = list(split_by_source(expand(trajs), eval_fraction=0.3, seed=7))
    assert [s.split for s in again] == [s.split for s in samples]
    by_traj = list(split_by_source(expand(trajs), eval_fraction=0.5, seed=7, key="trajectory_id"))
    assert {s.split for s in by_traj} == {"train", "eval"}


def test_bench_rows_of_cleaned_trajectories_are_renumbered() -> None:
    cmd = _act("mytool")
    keys = ["task", "id", "prompt", "response", "system_str", "extra", "turn_idx", "total_turns"]
    row = {"id": "orig-t9", "total_turns": 9, "extra": "kept", "_keys": keys}
    traj = Trajectory(id="orig", domain="terminal", system_prompt="S", task="terminal", turns=(
        Turn(action=cmd, observation=MARK + "bash: mytool: command not found", meta={"row": row}),
        Turn(action=cmd, observation=MARK + "ok", meta={"row": row}),
    ))
    rows = list(samples_to_bench_rows(expand(skip_retry_cycles([traj]))))
    assert rows == [{"task": "terminal", "id": "orig-t1", "prompt": [cmd], "response": [MARK + "ok"],
                     "system_str": "S", "extra": "kept", "turn_idx": 1, "total_turns": 1}]
    assert list(rows[0]) == keys


def test_bench_rows_without_remembered_rows() -> None:
    rows = list(samples_to_bench_rows(expand([_traj([("a1", "o1"), ("a2", "o2")])])))
    assert [r["id"] for r in rows] == ["t-t1", "t-t2"]
    assert rows[1]["prompt"] == ["a1", "a2"] and rows[1]["response"] == [MARK + "o1", MARK + "o2"]
    assert rows[0]["task"] == "terminal" and rows[0]["total_turns"] == 2


def test_dataset_tally_counts_trajectories_categories_and_lengths() -> None:
    a = list(expand([_traj([("ls", "x y"), ("cat f", "z"), ("pwd", "/root")], tid="a")]))
    b = list(expand([_traj([("echo hi there", "hi there")], domain="web", tid="b")]))
    stats = TurnStats(overlap=1.0, novelty=0.0, jaccard=0.0, length_ratio=3.0, obs_tokens=9, action_tokens=3)
    loss = LossMask(category="echo", keep=False, keep_ratio=0.05, stats=stats)
    a[1] = a[1].model_copy(update={"mask": loss, "split": "eval"})
    samples = [*a, *b]
    tally = DatasetTally()
    assert all(tally.add(s) is s for s in samples)
    data = tally.stats()
    assert (data.samples, data.trajectories, data.domains) == (4, 2, {"terminal": 3, "web": 1})
    assert (data.categories, data.kept, data.splits) == ({"echo": 1}, {"echo": 0}, {"eval": 1})
    # action tokens 1 (ls), 3 (the mask's count), 1 (pwd), 3 (echo hi there): bins [1, 2) and [2, 4)
    acts = data.action_tokens
    assert (acts.counts[:3], sum(acts.counts), acts.total, acts.max) == ([0, 2, 2], 4, 8, 3)
    # observation tokens 2, 9 (the mask's), 1, 2: bins [1, 2), [2, 4) twice, [8, 16)
    obs = data.observation_tokens
    assert (obs.counts[:5], sum(obs.counts), obs.total, obs.max) == ([0, 1, 2, 0, 1], 4, 14, 9)
    one_by_one = DatasetStats()
    for s in samples:
        one_by_one.add(s)
    assert one_by_one == data

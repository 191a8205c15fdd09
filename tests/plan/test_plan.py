"""The planner: candidates imagined on forks, scored, ranked; the live episode untouched; the best run once.

Real components throughout (the simulator and its forks, the response cache and its file, real HTTP
endpoints on 127.0.0.1, a real environment registered like a user's domain); only the world model,
the judge and the agent are scripted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentworld.domains.base import DomainPlugin, register_domain, unregister_domain
from agentworld.domains.registry import Domain, DomainRegistry
from agentworld.endpoints import build_backend
from agentworld.errors import AgentWorldError
from agentworld.models.base import ChatRequest
from agentworld.models.cache import ResponseCache
from agentworld.models.scripted import ScriptedBackend
from agentworld.plan import (
    ImaginedStep,
    JudgeScorer,
    ModelAgent,
    PlanContext,
    Planner,
    RuleCheck,
    RuleScorer,
    ScriptedAgent,
    parse_verdict,
)
from agentworld.serve.mock_server import MockConfig, run_mock_server
from agentworld.sim import Simulator, WorldSpec
from agentworld.sim.router import Router
from serving import chat_server


def typed(command: str) -> list[dict[str, Any]]:
    return [{"keystrokes": command + "\n", "duration": 1.0}]


def screen(command: str, output: str = "") -> str:
    lines = [f"root@host:/app# {command}", *([output] if output else []), "root@host:/app#"]
    return "\n".join(lines)


def world(request: ChatRequest) -> str:
    """A terminal world model: ``bad…`` is not installed, ``seed1…`` fails only under seed 1."""
    command = request.messages[-1].content.split('"keystrokes": "')[-1].split("\\n")[0]
    turns = (len(request.messages) - 2) // 2
    if command.startswith("bad") or (command.startswith("seed1") and request.seed == 1):
        text = screen(command, f"bash: {command.split()[0]}: command not found")
    else:
        text = screen(command, f"ran {command} after {turns} turns")
    return f"<predicted_observation>\n{text}\n</predicted_observation>"


def episode(model: Any = None, **options: Any) -> Simulator:
    sim = Simulator(model or ScriptedBackend(default=world), **options)
    sim.reset(WorldSpec(domain="terminal", initial_state="root@host:/app#"), seed=0)
    return sim


def test_candidates_are_ranked_by_their_imagined_outcome_and_the_episode_is_untouched() -> None:
    with episode() as sim, episode() as twin:
        sim.step(typed("ls"))
        twin.step(typed("ls"))
        before = sim.state()
        planner = Planner(RuleScorer(), k=3)
        plan = asyncio.run(planner.aplan(sim, [typed("bad-tool x"), typed("good-tool x"), typed("other")]))
        assert [c.index for c in plan.ranked] == [1, 2, 0]
        assert [c.score for c in plan.ranked] == [1.0, 1.0, 0.0]
        worst = plan.ranked[-1].samples[0]
        assert worst.verdict.label == "fail" and "command not found" in worst.verdict.detail
        assert "bash: bad-tool: command not found" in plan.ranked[-1].observation
        assert "ran good-tool x after 1 turns" in plan.best.observation  # imagined after the real `ls`
        assert sim.state() == before
        assert sim.step(typed("pwd")).observation == twin.step(typed("pwd")).observation


def test_at_most_k_candidates_are_imagined_and_invalid_ones_are_named() -> None:
    with episode() as sim:
        plan = asyncio.run(Planner(RuleScorer(), k=2).aplan(sim, [typed("a"), typed("b"), typed("c")]))
        assert sorted(c.index for c in plan.ranked) == [0, 1]
        with pytest.raises(AgentWorldError, match=r"candidate 2: .*keystroke"):
            asyncio.run(Planner(RuleScorer()).aplan(sim, [typed("a"), [{"nope": 1}]]))
        with pytest.raises(AgentWorldError, match="no candidate actions given and no agent"):
            asyncio.run(Planner(RuleScorer()).aplan(sim))


def test_horizon_above_one_lets_the_agent_continue_the_imagined_rollout() -> None:
    def next_step(context: PlanContext, imagined: Sequence[ImaginedStep]) -> Any:
        first = imagined[0].action[0]["keystrokes"]
        if len(imagined) == 2:
            return None  # the agent is done after two steps
        return typed("bad-check") if first.startswith("mkdir") else typed("cat out/x")

    agent = ScriptedAgent((typed("mkdir out"), typed("touch out/x")), continuation=next_step)
    with episode() as sim:
        before = sim.state()
        plan = asyncio.run(Planner(RuleScorer(), agent=agent, horizon=4).aplan(sim))
        assert sim.state() == before
    by_index = {c.index: c for c in plan.ranked}
    assert [len(c.samples[0].steps) for c in plan.ranked] == [2, 2]
    assert by_index[0].samples[0].steps[1].action == typed("bad-check")
    assert by_index[0].score == 0.0 and by_index[1].score == 1.0  # the continuation decides
    assert "ran cat out/x after 1 turns" in by_index[1].samples[0].steps[1].observation
    assert sorted(agent.calls) == [1, 1, 2, 2]


def test_samples_use_their_own_seeds_and_average() -> None:
    with episode() as sim:
        plan = asyncio.run(Planner(RuleScorer(), samples=3).aplan(sim, [typed("seed1 job"), typed("steady")]))
    flaky = next(c for c in plan.ranked if c.index == 0)
    assert [s.seed for s in flaky.samples] == [0, 1, 2]
    assert [s.verdict.label for s in flaky.samples] == ["pass", "fail", "pass"]
    assert flaky.score == pytest.approx(2 / 3) and plan.best.index == 1


@pytest.mark.parametrize(("reply", "label"), [
    ("The files exist.\nVerdict: success", "success"),
    ("Reasoning... the command failed earlier.\n**Verdict:** On-Track", "on track"),
    ('{"verdict": "failure", "why": "it hangs"}', "failure"),
    ("\\boxed{on track}", "on track"),
    ("<think>this is a failure</think>It worked. Final verdict: SUCCESSFUL", "success"),
    ("The agent failed to create the directory.", "failure"),
    ("I cannot tell.", None),
    ("", None),
])
def test_judge_verdicts_are_parsed_from_free_form_replies(reply: str, label: str | None) -> None:
    assert parse_verdict(reply) == label


def test_the_judge_scores_one_half_for_on_track_and_is_asked_again_when_unparsable() -> None:
    judge = ScriptedBackend(["no idea", "Verdict: on track", "hmm", "???"])
    context = PlanContext(domain="terminal", task="make a dir")
    steps = [ImaginedStep(action=typed("mkdir a"), observation=screen("mkdir a"), source="world_model")]
    cache = ResponseCache()
    verdict = asyncio.run(JudgeScorer(judge).score(context, steps, cache))
    assert (verdict.score, verdict.label) == (0.5, "on track")
    again = asyncio.run(JudgeScorer(judge).score(context, steps, cache))
    assert again == verdict and cache.misses == 2  # both attempts came from the cache
    other = [steps[0].model_copy(update={"observation": "changed"})]
    unparsed = asyncio.run(JudgeScorer(judge).score(context, other, cache))
    assert (unparsed.score, unparsed.label, unparsed.detail) == (0.0, "unparsed", "???")
    assert len(judge.calls) == 4 and "# Task\nmake a dir" in judge.calls[0].messages[-1].content
    assert "Action 1:" in judge.calls[0].messages[-1].content and judge.calls[0].messages[-1].content.count(
        "command not found") == 0


def test_rule_check_uses_the_domains_error_patterns_and_the_tasks_own() -> None:
    ok = screen("ls", "a.txt")
    assert RuleCheck().check("terminal", [ok]).label == "pass"
    assert RuleCheck().check("terminal", [screen("x", "bash: x: command not found")]).label == "fail"
    quiet = RuleCheck(domain_errors=False)
    assert quiet.check("terminal", [screen("x", "x: command not found")]).label == "pass"
    assert RuleCheck(errors=(r"^fatal: ",)).check("terminal", [screen("git", "fatal: no repo")]).score == 0
    assert RuleCheck(must_contain=("a.txt",)).check("terminal", [ok]).score == 1
    assert RuleCheck(must_contain=("b.txt",)).check("terminal", [ok]).detail == "no step shows 'b.txt'"
    hung = "root@host:/app# tail -f log\nline 1"
    assert RuleCheck(end_at_prompt=True).check("terminal", [hung]).label == "fail"
    assert RuleCheck(end_at_prompt=True).check("terminal", [hung, ok]).label == "pass"


def test_a_repeated_plan_sends_no_request_again(tmp_path: Path) -> None:
    requests: list[str] = []

    def answer(path: str, body: dict[str, Any], headers: Any) -> str:
        requests.append(path)
        if path.startswith("/judge"):
            return "Verdict: on track"
        last = body["messages"][-1]["content"]
        text = screen("x", "bad" if "bad" in last else "fine")
        return f"<predicted_observation>\n{text}\n</predicted_observation>"

    candidates = [typed("bad one"), typed("good one")]
    with chat_server(answer) as url:
        model = build_backend("m", url + "/world/v1")
        judge = build_backend("j", url + "/judge/v1")

        async def plan_once() -> Any:
            cache = ResponseCache(tmp_path / "cache.jsonl")
            sim = Simulator(model)
            await sim.areset(WorldSpec(domain="terminal"), seed=5)
            try:
                return await Planner(JudgeScorer(judge), samples=2, cache=cache).aplan(sim, candidates)
            finally:
                cache.close()

        first = asyncio.run(plan_once())
        sent = len(requests)
        second = asyncio.run(plan_once())
    assert sent >= 8 and sorted(set(requests)) == ["/judge/v1/chat/completions", "/world/v1/chat/completions"]
    assert len(requests) == sent  # the second plan, with a new cache object on the same file, sent nothing
    def seen(plan: Any) -> list[Any]:
        return [(c.index, c.score, [(s.seed, s.verdict, [t.observation for t in s.steps]) for s in c.samples])
                for c in plan.ranked]

    assert seen(second) == seen(first) and first.best.score == 0.5
    assert [s.seed for s in first.best.samples] == [5, 6]
    assert {t.source for c in second.ranked for s in c.samples for t in s.steps} == {"cache"}


# -- the chosen action runs for real, once ------------------------------------------------------


OPENED: list[Counter] = []


class Counter:
    """A real in-process environment: ``add N`` changes it (``add`` over 100 overflows)."""

    def __init__(self, seed: int) -> None:
        self.value, self.actions = 0, []
        OPENED.append(self)

    def initial_observation(self) -> str:
        return "count=0"

    def step(self, action: str) -> str:
        self.actions.append(action)
        self.value += int(action.split()[1])
        return f"count={self.value}"

    def close(self) -> None:
        pass


def open_counter(seed: int = 0) -> Counter:
    return Counter(seed)


@pytest.fixture
def counter() -> Iterator[DomainRegistry]:
    register_domain(DomainPlugin(name="plancounter", display="Counter",
                                 environment=f"{__name__}:open_counter"))
    OPENED.clear()
    yield DomainRegistry({"plancounter": Domain(name="plancounter", display="Counter",
                                                judge_system_prompt="J.", system_prompt="Count.")})
    OPENED.clear()
    unregister_domain("plancounter")


def test_the_chosen_action_runs_for_real_through_the_router_exactly_once(counter: DomainRegistry) -> None:
    def imagine(request: ChatRequest) -> str:
        amount = int(request.messages[-1].content.split()[1])
        text = "Error: overflow" if amount > 100 else f"count={amount}"
        return f"<predicted_observation>\n{text}\n</predicted_observation>"

    router = Router("real", domain="plancounter")
    with Simulator(ScriptedBackend(default=imagine), router=router, domains=counter) as sim:
        sim.reset(WorldSpec(domain="plancounter", initial_state="count=0"), seed=0)
        decision = asyncio.run(Planner(RuleScorer(), samples=2).aact(sim, ["add 500", "add 7", "add 9"]))
        assert decision.plan.best.action == "add 7" and decision.plan.ranked[-1].action == "add 500"
        assert (decision.result.source, decision.result.observation) == ("real", "count=7")
        assert [t.action for t in sim.history] == ["add 7"] and router.real_steps == 1
    router.close()
    assert len(OPENED) == 1 and OPENED[0].actions == ["add 7"]  # the forks never reached it


def test_a_fork_with_a_seed_asks_the_model_with_that_seed_and_the_parent_keeps_its_own() -> None:
    model = ScriptedBackend(default=world)
    with episode(model) as sim:
        with sim.fork(seed=7) as branch:
            assert "ran x after 0 turns" in branch.step(typed("x")).observation
            assert model.calls[-1].seed == 7 and branch.state().seed == 7
        sim.step(typed("y"))
        assert model.calls[-1].seed == 0 and sim.state().seed == 0 and sim.state().turn == 1


def test_rollouts_run_concurrently_up_to_the_bound() -> None:
    with run_mock_server(MockConfig(latency_ms=300)) as url:
        control = url.removesuffix("/v1") + "/_mock"

        async def plan(concurrency: int) -> None:
            model = build_backend("mock", url)
            sim = Simulator(model)
            await sim.areset(WorldSpec(domain="terminal"), seed=0)
            planner = Planner(RuleScorer(), samples=3, concurrency=concurrency)
            await planner.aplan(sim, [typed("a"), typed("b")])
            await model.aclose()

        in_flight = []
        for bound in (2, 6):
            httpx.post(control + "/reset")
            asyncio.run(plan(bound))
            in_flight.append(httpx.get(control + "/stats").json()["max_in_flight"])
    assert in_flight == [2, 6]


def test_an_agent_model_proposes_the_candidates_and_continues_the_rollouts() -> None:
    seen: list[dict[str, Any]] = []

    def agent(path: str, body: dict[str, Any], headers: Any) -> str:
        seen.append(body)
        messages = body["messages"]
        if len(messages) == 2:  # proposing: one reply per seed
            replies = {0: 'First: ```json\n[{"keystrokes": "bad-tool\\n"}]\n```',
                       1: 'Try {"keystrokes": "good-tool\\n"}', 2: '[{"keystrokes": "bad-tool\\n"}]',
                       3: "I have no idea."}
            return replies[body["seed"]]
        return '{"keystrokes": "echo next\\n"}' if len(messages) == 4 else "DONE"

    with chat_server(agent) as url, episode() as sim:
        async def plan() -> Any:
            backend = build_backend("agent", url + "/v1")
            spec = WorldSpec(domain="terminal")
            planner = Planner(RuleScorer(), agent=ModelAgent(backend, spec), k=4, horizon=3,
                              task="make it work")
            try:
                return await planner.aplan(sim)
            finally:
                await backend.aclose()

        result = asyncio.run(plan())
    assert [(c.index, c.score) for c in result.ranked] == [(1, 1.0), (0, 0.0)]  # no duplicate, no non-action
    best = result.best.samples[0].steps
    assert [s.action for s in best] == [{"keystrokes": "good-tool\n"}, {"keystrokes": "echo next\n"}]
    assert "ran echo next after 1 turns" in best[1].observation
    assert "Task: make it work" in seen[0]["messages"][0]["content"]
    assert sorted(b["seed"] for b in seen if len(b["messages"]) == 2) == [0, 1, 2, 3]

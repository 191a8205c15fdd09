"""Fictional worlds: bible checks, the generator (scripted), the search world's ledger, table scoring."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from typing import Any

import pytest

from agentworld.domains.actions import format_tool_action, tool_call
from agentworld.models.base import ChatRequest
from agentworld.models.cache import ResponseCache
from agentworld.models.scripted import ScriptedBackend
from agentworld.synth.fiction.bible import Bible, BibleDocument, StatedFact, check_bible, label
from agentworld.synth.fiction.generate import generate_bible
from agentworld.synth.fiction.ledger import BibleFacts, document_problems
from agentworld.synth.fiction.procedural import procedural_bible
from agentworld.synth.fiction.score import score_table
from agentworld.synth.fiction.search import FictionSearchWorld
from agentworld.synth.fiction.tasks import fact_tasks, table_tasks

TOPIC = "the Amber Coast"


@pytest.fixture(scope="module")
def bible() -> Bible:
    return procedural_bible(TOPIC, seed=3)


@pytest.fixture(scope="module")
def world(bible: Bible) -> FictionSearchWorld:
    return FictionSearchWorld(bible)


def test_procedural_bible_is_consistent(bible: Bible) -> None:
    assert len(bible.entities) == 18 and len(bible.documents) == 18 + 3
    assert check_bible(bible) == []
    assert document_problems(bible) == []


def test_check_bible_names_each_inconsistency(bible: Bible) -> None:
    city = bible.entities[0]
    wrong = BibleDocument(id="bad/one", title="Bad", text=f"The population of {city.name} is 5.",
                          facts=[StatedFact(entity=city.id, attribute="population", value=5)])
    silent = BibleDocument(id="bad/two", title="Silent", text=f"{city.name} is a town.",
                           facts=[StatedFact(entity=city.id, attribute="region",
                                             value=city.attributes["region"])])
    broken = bible.model_copy(update={"documents": [wrong, silent]})
    problems = check_bible(broken)
    assert any("bad/one" in p and "the entity table says" in p for p in problems)
    assert any("bad/two" in p and "the text does not state" in p for p in problems)
    assert any("bad/one line 1" in p for p in document_problems(broken))


# ---- a world model that paraphrases, and sometimes contradicts the bible --------------------------------

_SENTENCE = re.compile(r"The ([a-z ]+) of ([^.\n]+?) is ([^.\n]+)\.")


def _paraphrase(text: str) -> str:
    return _SENTENCE.sub(lambda m: f"{m.group(2)}'s {m.group(1)} is {m.group(3)}.", text)


def _bump_number(text: str) -> str:
    """The first number stated after a label, plus one (a contradiction the ledger must catch)."""
    m = re.search(r"(?:'s [a-z ]+ is |: [a-z ]+ )(\d+)", text)
    if m is None:
        return text + "\n\n[99] https://elsewhere.example/invented\nTitle: Invented\nSnippet: x\nDate: N/A"
    return text[:m.start(1)] + str(int(m.group(1)) + 1) + text[m.end(1):]


class ParaphrasingModel:
    """Renders the grounded answer in other words; one in three answers misstates a fact, and one in
    nine keeps misstating it when re-asked (so the repair, not the model, fixes it)."""

    def __init__(self, world: FictionSearchWorld) -> None:
        self.world = world
        self.first = self.reasks = 0

    def __call__(self, request: ChatRequest) -> str:
        users = [m.content for m in request.messages if m.role == "user"]
        action = next(u for u in reversed(users) if tool_call(u))
        reask = tool_call(users[-1]) is None
        name, arguments = tool_call(action) or ("", {})
        obs = _paraphrase(self.world.truth(name, arguments))
        bucket = int(hashlib.sha256(action.encode()).hexdigest(), 16) % 9
        self.reasks += reask
        self.first += not reask
        if (not reask and bucket % 3 == 0) or bucket == 0:
            obs = _bump_number(obs)
        return f"<predicted_observation>\n{obs}\n</predicted_observation>"


def _queries(bible: Bible, world: FictionSearchWorld) -> list[dict[str, Any]]:
    """200 calls: a search per fact, a paraphrased question, and a follow-up extraction of the top page."""
    calls: list[dict[str, Any]] = []
    for e in bible.entities:
        for a in e.attributes:
            calls.append({"tool_name": "web_search", "arguments": {"query": f"{e.name} {label(a)}"}})
            question = f"what is the {label(a)} of {e.name}?"
            calls.append({"tool_name": "web_search", "arguments": {"query": question}})
            first = world.truth("web_search", {"query": f"{e.name} {label(a)}"})
            top = re.search(r"^\[1\] (\S+)", first, re.M)
            assert top is not None
            calls.append({"tool_name": "web_extractor", "arguments": {"url": top.group(1), "goal": label(a)}})
    calls += [{"tool_name": "web_extractor", "arguments": {"url": bible.base_url + f"list/{k}"}}
              for k in bible.kinds()]
    return calls[:200]


def test_search_world_answers_200_queries_without_contradicting_its_bible(bible: Bible,
                                                                         world: FictionSearchWorld) -> None:
    calls = _queries(bible, world)
    assert len(calls) == 200
    model = ParaphrasingModel(world)
    judge = world.ledger()
    found_first = remaining = repaired = 0
    with world.simulator(ScriptedBackend(default=model)) as sim:
        sim.reset(world.spec())
        for call in calls:
            step = sim.step(call)
            text = format_tool_action(call["tool_name"], call["arguments"])
            found_first += bool(step.contradictions)
            repaired += step.repaired
            remaining += len(judge.check(text, step.observation))
            assert "https://elsewhere.example" not in step.observation
        shown = [t.observation for t in sim.history]
    assert remaining == 0
    assert found_first >= 60, "the ledger must catch the model's misstatements (1 in 3 answers)"
    assert model.reasks == found_first and repaired > 0
    # paraphrases survive: an answer that agreed with the bible is kept in the model's words
    assert sum("'s population is" in t for t in shown) >= 10


def test_grounded_answers_never_contradict_the_bible(bible: Bible, world: FictionSearchWorld) -> None:
    judge = world.ledger()
    for call in _queries(bible, world):
        obs = world.truth(call["tool_name"], call["arguments"])
        assert judge.check(format_tool_action(call["tool_name"], call["arguments"]), obs) == []


def test_ledger_names_a_misstated_fact_and_an_invented_page(bible: Bible, world: FictionSearchWorld) -> None:
    city = bible.entities[0]
    action = format_tool_action("web_extractor", {"url": bible.base_url + f"settlement/{city.id}"})
    page = world.truth("web_extractor", {"url": bible.base_url + f"settlement/{city.id}"})
    population = int(city.attributes["population"])
    wrong = page.replace(f"is {population}.", f"is {population + 7}.")
    found = world.ledger().check(action, wrong + "\nSee https://elsewhere.example/x")
    kinds = sorted(c.kind for c in found)
    assert kinds == ["bible_fact", "bible_url"]
    assert found[-1].expected == str(city.attributes["population"]) or found[0].expected == str(
        city.attributes["population"])


def test_a_label_inside_a_name_is_no_statement_of_that_attribute() -> None:
    from agentworld.synth.fiction.bible import Entity

    small = Bible(topic="t", entities=[
        Entity(id="ada", kind="person", name="Ada Varn", attributes={"home": "Velmar"}),
        Entity(id="home-guild", kind="guild", name="Home Guild", attributes={"leader": "Ada Varn"})])
    ledger = BibleFacts(small)
    assert ledger.line_conflicts("The leader of Home Guild is Ada Varn.", None) == []
    assert ledger.line_conflicts("The home of Ada Varn is Kesh.", None) == [(small.entities[0], "home")]


# ---- tasks and their scores ------------------------------------------------------------------------------

def test_table_tasks_score_100_with_the_reference_and_less_when_perturbed(bible: Bible,
                                                                           world: FictionSearchWorld) -> None:
    tables = table_tasks(bible)
    assert {t["id"] for t in tables} >= {"table-guild", "table-person", "table-settlement"}
    for task in tables:
        ref = task["reference_answer"]
        exact = score_table(ref, ref)
        assert (exact.item_f1, exact.row_f1) == (100.0, 100.0)
        markdown = "\n".join(["| " + " | ".join(ref["columns"]) + " |", "|---" * len(ref["columns"]) + "|"]
                             + ["| " + " | ".join(map(str, r)) + " |" for r in ref["rows"]])
        assert score_table(markdown, ref).item_f1 == 100.0
        perturbed = json.loads(json.dumps(ref))
        perturbed["rows"][0][1] = "nowhere" if not str(perturbed["rows"][0][1]).isdigit() else "1"
        worse = score_table(perturbed, ref)
        assert worse.item_f1 < 100.0 and worse.row_f1 < 100.0
        last = task["reference_plan"][-1]
        page = world.truth(last["tool"], last["arguments"])
        assert all(f"- {row[0]}: " in page for row in ref["rows"]), "the plan's last page lists every row"
        dropped = {"columns": ref["columns"], "rows": ref["rows"][1:]}
        assert score_table(dropped, ref).item_recall < 100.0 == score_table(dropped, ref).item_precision


def test_fact_tasks_are_answered_by_their_reference_plan(bible: Bible, world: FictionSearchWorld) -> None:
    tasks = fact_tasks(bible, limit=20)
    assert len(tasks) == 20
    for task in tasks:
        last = task["reference_plan"][-1]
        page = world.truth(last["tool"], last["arguments"])
        assert task["reference_answer"] in page, task["id"]


# ---- the generator (scripted) ----------------------------------------------------------------------------

def _generator(bible: Bible, drift: set[str], stubborn: set[str]) -> ScriptedBackend:
    """Answers the entities request from ``bible``; profiles of ``drift`` names misstate a number on the
    first attempt, those of ``stubborn`` names always."""
    tries: dict[str, int] = {}

    def reply(request: ChatRequest) -> str:
        prompt = request.messages[-1].content
        if "Give " in prompt:
            rows = [{"kind": e.kind, "name": e.name, "attributes": e.attributes} for e in bible.entities]
            return "```json\n" + json.dumps({"entities": rows}) + "\n```"
        entity = json.loads(prompt.split("\n")[1])
        name = entity.pop("name")
        tries[name] = tries.get(name, 0) + 1
        facts = [{"attribute": k, "value": v} for k, v in entity.items()]
        lines = [f"# {name}", ""] + [f"The {k} of {name} is {v}." for k, v in entity.items()]
        if name in stubborn or (name in drift and tries[name] == 1):
            lines[2] = re.sub(r"is (.+)\.$", "is 123456.", lines[2])
        return json.dumps({"title": f"{name} (wiki)", "text": "\n".join(lines), "facts": facts})

    return ScriptedBackend(default=reply, name="gen")


def test_generator_bible_refuses_drifting_profiles_and_resumes_from_its_cache(bible: Bible,
                                                                            tmp_path: Any) -> None:
    names = [e.name for e in bible.entities]
    backend = _generator(bible, drift={names[0]}, stubborn={names[1]})
    cache = ResponseCache(tmp_path / "cache.jsonl")
    stages: list[str] = []
    made, left_out = asyncio.run(generate_bible(TOPIC, backend, cache, seed=1, advance=stages.append))
    cache.close()
    assert stages.count("entities") == 1 and stages.count("profiles") == 18
    assert check_bible(made) == [] and document_problems(made) == []
    assert len(left_out) == 1 and names[1] in left_out[0] and "left out" in left_out[0]
    profiles = {d.title for d in made.documents if d.id.split("/")[0] != "list"}
    assert f"{names[0]} (wiki)" in profiles and f"{names[1]} (wiki)" not in profiles
    assert len(backend.calls) == 1 + 18 + 2
    again = _generator(bible, drift={names[0]}, stubborn={names[1]})
    remade, _ = asyncio.run(generate_bible(TOPIC, again, ResponseCache(tmp_path / "cache.jsonl"), seed=1))
    assert again.calls == [] and remade == made


# ---- the MCP world ---------------------------------------------------------------------------------------

def test_mcp_entity_store_runs_each_reference_plan_to_its_answer(bible: Bible) -> None:
    from agentworld.synth.fiction.mcp import EntityStore, entity_table, mcp_tasks, mcp_tools

    names = {t["name"] for t in mcp_tools(bible)}
    assert {"get_guild", "list_guilds", "search_settlements", "update_person"} <= names
    tasks = mcp_tasks(bible, limit=0)
    assert {t["id"].split("-")[0] for t in tasks} == {"table", "fact", "update"}
    initial = entity_table(bible)
    for task in tasks:
        store = EntityStore(bible)
        outputs = [json.loads(store.call(s["tool"], s["arguments"])) for s in task["reference_plan"]]
        assert all("error" not in o for o in outputs), task["id"]
        if task["id"].startswith("table-"):
            (rows,) = outputs[0].values()
            ref = task["reference_answer"]
            keys = [c.replace(" ", "_") for c in ref["columns"]]
            got = {"columns": ref["columns"], "rows": [[r[k] for k in keys] for r in rows]}
            assert score_table(got, ref).item_f1 == 100.0
        elif task["id"].startswith("fact-"):
            assert task["reference_answer"] in json.dumps(outputs[0])
        else:
            (cond,) = task["success"]["state"]
            assert store.state[cond["kind"]][cond["id"]][cond["field"]] == cond["value"]
            assert initial[cond["kind"]][cond["id"]][cond["field"]] != cond["value"]
    store = EntityStore(bible)
    assert "no guild with id" in store.call("get_guild", {"id": "nope"})
    assert "has no field" in store.call("update_guild", {"id": bible.entities[-1].id, "fields": {"x": 1}})


# ---- the command -----------------------------------------------------------------------------------------

@pytest.fixture()
def cli(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The root CLI; ``synth`` served by this package's app until the synth group registers ``world``."""
    from typer.testing import CliRunner

    from agentworld import cli as root

    if "synth" not in root.COMMANDS or "world" not in getattr(root.load_command("synth"), "commands", {}):
        monkeypatch.setitem(root.COMMANDS, "synth", root.LazyCommand("agentworld.synth.fiction.cli:app",
                                                                     "Fictional worlds."))
    runner = CliRunner()
    return lambda *args: runner.invoke(root.app, list(args))


def test_synth_world_search_offline_writes_a_consistent_world(cli: Any, tmp_path: Any) -> None:
    from agentworld.synth.fiction.build import load_bible, load_search_world

    out = tmp_path / "amber"
    result = cli("synth", "world", "--domain", "search", "--topic", TOPIC, "--out", str(out), "--seed", "3")
    assert result.exit_code == 0, result.output
    assert "18 entities, 21 documents" in result.output
    assert load_bible(out) == procedural_bible(TOPIC, seed=3)
    tasks = [json.loads(x) for x in (out / "tasks.jsonl").read_text().splitlines()]
    assert len(tasks) == 30 + len(table_tasks(load_bible(out)))
    world = load_search_world(out)
    hit = world.truth("web_search", {"query": "list of guilds"})
    assert hit.startswith("[1] https://the-amber-coast.fiction.example/")
    again = cli("synth", "world", "--domain", "search", "--topic", TOPIC, "--out", str(out), "--seed", "3")
    assert again.exit_code == 0 and load_bible(out) == procedural_bible(TOPIC, seed=3)


def test_synth_world_mcp_writes_a_world_folder_whose_plans_succeed(cli: Any, tmp_path: Any) -> None:
    from agentworld.synth.fiction.mcp import EntityStore
    from agentworld.synth.world import evaluate, final_state, load_world

    out = tmp_path / "registry"
    result = cli("synth", "world", "--domain", "mcp", "--topic", TOPIC, "--out", str(out), "--seed", "3")
    assert result.exit_code == 0, result.output
    world = load_world(out)
    assert world.domain == "mcp" and set(world.initial_state.entities) == {"guild", "person", "settlement"}
    assert {t.id.split("-")[0] for t in world.tasks} == {"table", "fact", "update"}
    for task in world.tasks:
        store = EntityStore(procedural_bible(TOPIC, seed=3))
        steps = [(s.tool, s.arguments, store.call(s.tool, s.arguments)) for s in task.reference_plan]
        trace = [{"tool": t, "arguments": a} for t, a, _ in steps]
        assert evaluate(task, final_state(world, steps), trace).passed, task.id
        assert not evaluate(task, final_state(world, []), []).passed, task.id


def test_synth_world_refuses_a_folder_with_other_files(cli: Any, tmp_path: Any) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    result = cli("synth", "world", "--domain", "search", "--topic", TOPIC, "--out", str(tmp_path))
    assert result.exit_code == 2 and "not an agentworld synth world folder" in result.output
    assert (tmp_path / "notes.txt").read_text() == "mine" and not (tmp_path / "bible.json").exists()


def test_load_bible_names_the_bad_field(tmp_path: Any) -> None:
    from agentworld.errors import DataError
    from agentworld.synth.fiction.build import load_bible

    (tmp_path / "bible.json").write_text(json.dumps({"topic": "x", "entities": [{"id": "Bad Id", "kind": "k",
                                                                                    "name": "n"}]}))
    with pytest.raises(DataError, match=r"entities\.0\.id"):
        load_bible(tmp_path)


def test_the_mcp_world_is_served_to_a_real_mcp_client_with_the_bible_in_the_prompt(cli: Any,
                                                                                  tmp_path: Any) -> None:
    import os
    import sys

    import httpx
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from agentworld.serve.mock_server import MockConfig, run_mock_server

    out = tmp_path / "registry"
    made = cli("synth", "world", "--domain", "mcp", "--topic", TOPIC, "--out", str(out), "--seed", "3")
    assert made.exit_code == 0
    guild = next(e for e in procedural_bible(TOPIC, seed=3).entities if e.kind == "guild")

    async def session(url: str) -> tuple[list[str], bool]:
        args = ["-m", "agentworld", "serve", "mcp", "--model-base-url", url, "--model", "mock",
                "--world", str(out)]
        params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))
        async with Client(params) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            refused = await client.call_tool("update_guild", {"id": guild.id, "fields": {"colour": "red"}})
            await client.call_tool("get_guild", {"id": guild.id})
            return names, bool(refused.is_error)

    with run_mock_server(MockConfig()) as url:
        names, refused = asyncio.run(session(url))
        seen = httpx.get(f"{url.removesuffix('/v1')}/_mock/requests", params={"full": 1}).json()
    assert {"get_guild", "list_settlements", "search_persons", "update_person"} <= set(names)
    assert refused, "an update of a field the bible's kind does not have is refused by the tool's schema"
    prompt = json.dumps(seen[-1]["messages"])
    assert guild.name in prompt and str(guild.attributes["leader"]) in prompt


@pytest.mark.parametrize(("reply", "expected"), [
    ("no json here", r"answer \(entities\) is not JSON"),
    ('{"entities": []}', r"expected a non-empty list under 'entities'"),
    ('{"entities": [{"kind": "city"}]}', r"entities\[0\]: needs 'kind' and 'name'"),
    ('{"entities": [{"kind": "city", "name": "' + "x" * 300 + '"}]}', r"entities\[0\]: .*at most 200"),
    ('{"entities": [{"kind": "city", "name": "Vel"}, {"kind": "city", "name": "vel"}]}', r"duplicate id"),
])
def test_a_bad_entity_table_from_the_generator_is_one_clear_error(reply: str, expected: str) -> None:
    from agentworld.errors import AgentWorldError

    with pytest.raises(AgentWorldError, match=expected):
        asyncio.run(generate_bible(TOPIC, ScriptedBackend([reply]), ResponseCache()))

"""The real search environment: a BM25 index over a fixture folder, the three official tools, the recorder,
the environment and routing of the domain package, its rules on the shipped corpus."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.domains.actions import tool_call
from agentworld.domains.search.record import load_search_scenarios
from agentworld.domains.search.tools import SearchTools
from agentworld.envs.search_index import SearchIndex, SearchIndexError, default_docs_dir, html_to_text
from agentworld.errors import DataError
from agentworld.schema import OBSERVATION_MARKER, BenchSample, load_samples

DOCS = Path(__file__).parents[1] / "fixtures" / "search_docs"
JSON_URL = "https://docs.python.org/3/library/json.html"
RESULT_RE = re.compile(r"^\[(\d+)\] (https://\S+)\nTitle: (.+)\nSnippet: (.+)\nDate: (.+)$")
runner = CliRunner()


@pytest.fixture(scope="module")
def index() -> SearchIndex:
    return SearchIndex.from_folder(DOCS)


def test_query_ranks_the_relevant_page_first_in_the_official_format(index: SearchIndex) -> None:
    out = SearchTools(index).call("web_search", {"queries": ["serialize an object to a JSON string",
                                                             "filesystem paths"]})
    blocks = out.split("\n\n")
    results = [RESULT_RE.match(b) for b in blocks]
    assert all(results), out
    numbers = [int(m.group(1)) for m in results if m]
    assert numbers == list(range(1, len(numbers) + 1))  # numbering runs on across the batch
    first = results[0]
    assert first is not None
    assert first.group(2) == JSON_URL
    assert first.group(3) == "json — JSON encoder and decoder — Python 3 documentation"
    assert "json.dumps() to serialize an object" in first.group(4) and first.group(5) == "N/A"
    urls = [m.group(2) for m in results if m]
    assert "https://docs.python.org/3/library/pathlib.html" in urls[urls.index(JSON_URL) + 1:]


def test_query_with_no_match_says_so(index: SearchIndex) -> None:
    assert SearchTools(index).call("web_search", {"query": "zzyzx"}) == "No results found for 'zzyzx'."
    assert SearchTools(index).call("web_search", {"queries": []}).startswith("Error: web_search needs")


def test_extractor_returns_the_page_text_without_boilerplate(index: SearchIndex) -> None:
    tools = SearchTools(index)
    text = tools.call("web_extractor", {"url": JSON_URL})
    assert text.startswith("# json — JSON encoder and decoder\n")
    assert "## Basic Usage" in text and "- dumps: object to string\n- loads: string to object" in text
    assert "| JSON | Python |" in text and ">>> json.dumps([1, 2])\n'[1, 2]'" in text
    for boilerplate in ("tracking", "color: red", "Previous topic", "Copyright", "¶", "index"):
        assert boilerplate not in text, boilerplate
    assert tools.call("web_extractor", {"url": JSON_URL + "#basic-usage"}) == text
    assert tools.call("web_extractor", {"url": "https://example.com/x"}) == (
        "Error: failed to fetch https://example.com/x: the page is not accessible")


def test_extractor_with_a_goal_returns_the_heading_and_the_answering_sections(index: SearchIndex) -> None:
    tools = SearchTools(index)
    goal = "serialize with dumps, basic usage"
    text = tools.call("web_extractor", {"url": JSON_URL, "goal": goal})
    assert text.startswith("# json — JSON encoder and decoder\n\n## Basic Usage\n")
    assert "dumps: object to string" in text and "lightweight data interchange" not in text
    fallback = tools.call("web_extractor", {"url": JSON_URL, "goal": "zzyzx"})
    assert fallback.startswith("# json — JSON encoder and decoder\n\nJSON (JavaScript Object Notation)")
    assert "## Basic Usage" not in fallback


def test_memory_add_retrieve_update_remove_round_trip(index: SearchIndex) -> None:
    tools = SearchTools(index)

    def mem(**arguments: object) -> str:
        return tools.call("dict_memory", dict(arguments))

    assert mem(operation="add", dict={"lib": "json", "n": 2}) == (
        "Successfully added items of ['lib', 'n'] to memory.")
    assert json.loads(mem(operation="retrieve", key_list=["lib"])) == {"lib": "json"}
    assert mem(operation="update", dict={"n": 3}) == "Successfully updated items of ['n'] in memory."
    assert json.loads(mem(operation="retrieve_all")) == {"lib": "json", "n": 3}
    assert mem(operation="retrieve", key_list=["nope"]) == "Key not found: ['nope']"
    assert mem(operation="remove", key_list=["lib"]) == "Successfully removed items of ['lib'] from memory."
    assert mem(operation="retrieve", key_list=["lib"]) == "Key not found: ['lib']"
    assert mem(operation="remove_all") == "Successfully cleared all memory."
    assert mem(operation="retrieve_all") == "Memory is empty."
    assert mem(operation="explode").startswith("Error: dict_memory needs 'operation'")


def test_html_to_text_keeps_title_and_drops_scripts() -> None:
    title, text = html_to_text("<html><head><title>T &amp; U</title><script>x=1</script></head>"
                               "<body><p>a <b>bold</b>\n word</p><nav>menu</nav></body></html>")
    assert (title, text) == ("T & U", "a bold word")


def test_empty_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SearchIndexError, match="holds no readable"):
        SearchIndex.from_folder(tmp_path)


def test_a_missing_search_extra_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "bm25s", None)  # what an environment without the extra has
    with pytest.raises(SearchIndexError, match=r"needs bm25s: pip install 'agentworld\[search\]'"):
        SearchIndex.from_folder(DOCS)


def _scenarios(tmp_path: Path) -> Path:
    path = tmp_path / "scenarios.json"
    path.write_text(json.dumps([
        {"name": "json-lookup", "calls": [
            {"tool": "web_search", "arguments": {"queries": ["json encoder"]}},
            {"tool": "web_extractor", "arguments": {"url": JSON_URL}},
            {"tool": "dict_memory", "arguments": {"operation": "add", "dict": {"module": "json"}}}]},
        {"name": "paths", "calls": [{"tool": "web_search", "arguments": {"query": "pathlib"}}]}]))
    return path


def test_record_search_writes_valid_rows(tmp_path: Path) -> None:
    out = tmp_path / "search.jsonl"
    args = ["record", "search", "--scenarios", str(_scenarios(tmp_path)), "--out", str(out),
            "--docs", str(DOCS)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    samples = load_samples([out])
    assert [s.id for s in samples] == ["json-lookup-t1", "json-lookup-t2", "json-lookup-t3", "paths-t1"]
    assert {s.task for s in samples} == {"search"}
    last = samples[2]
    assert tool_call(last.prompt[0]) == ("web_search", {"queries": ["json encoder"]})
    assert last.prompt[0].startswith("**Action:**\n```json\n{\"tool_name\": \"web_search\"")
    assert last.response[0].startswith(f"{OBSERVATION_MARKER}\n[1] {JSON_URL}\nTitle: json")
    assert last.response[2] == f"{OBSERVATION_MARKER}\nSuccessfully added items of ['module'] to memory."
    again = runner.invoke(app, args)
    assert again.exit_code == 2 and "--overwrite" in again.output


@pytest.mark.parametrize(("content", "message"), [
    ("[{\"name\": \"x\", \"calls\": [{\"tool\": \"browse\", \"arguments\": {}}]}]", r"calls\[0\]"),
    ("{not json", "malformed JSON"),
    ("[{\"name\": \"bad name\", \"calls\": []}]", "name must be"),
])
def test_bad_scenarios_file_is_one_red_line_and_exit_2(tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(DataError, match=message):
        load_search_scenarios(bad)
    result = runner.invoke(app, ["record", "search", "--scenarios", str(bad),
                                 "--out", str(tmp_path / "o.jsonl"), "--docs", str(DOCS)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "bad.json" in lines[0], result.output
    assert not (tmp_path / "o.jsonl").exists()


# -- the domain package: recorder runs, environment, routing, rules ----------------------------------

def _scenario_lines(copies: int = 1) -> str:
    calls = [
        {"tool": "web_search", "arguments": {"query": "json encoder"}},
        {"tool": "web_extractor", "arguments": {"url": JSON_URL, "goal": "basic usage dumps"}},
        {"tool": "dict_memory", "arguments": {"operation": "add", "dict": {"dumps": "object to string"}}},
        {"tool": "web_search", "arguments": {"queries": ["pathlib paths", "asyncio event loop"]}},
        {"tool": "web_extractor", "arguments": {"url": "https://docs.python.org/3/library/nope.html"}},
        {"tool": "dict_memory", "arguments": {"operation": "retrieve", "key_list": ["dumps", "x"]}},
    ]
    return "".join(json.dumps({"name": f"research-{i}", "calls": calls}) + "\n" for i in range(copies))


def _record_cmd(scenarios: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "agentworld", "record", "search", "--scenarios", str(scenarios),
            "--out", str(out), "--docs", str(DOCS), *extra]


def _observations(path: Path) -> dict[str, str]:
    return {s.id: s.ground_truth for s in load_samples([path])}


def test_recording_the_same_scenarios_twice_gives_identical_observations(tmp_path: Path) -> None:
    scenarios = tmp_path / "s.jsonl"
    scenarios.write_text(_scenario_lines(2))
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for out in (first, second):  # two processes: two index builds
        subprocess.run(_record_cmd(scenarios, out), check=True, capture_output=True)
    a, b = _observations(first), _observations(second)
    assert len(a) == 12 and a.keys() == b.keys()
    same = sum(a[k] == b[k] for k in a) / len(a)
    assert same >= 0.95
    assert first.read_bytes() == second.read_bytes()  # no timings or dates in the rows: the whole file


def _group_alive(pgid: int) -> list[int]:
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(stat.parent.name))
    return alive


def test_sigkill_of_the_recorder_leaves_no_process_or_temp_file_and_resume_completes(tmp_path: Path) -> None:
    scenarios, out, tmp = tmp_path / "s.jsonl", tmp_path / "out" / "rows.jsonl", tmp_path / "tmp"
    scenarios.write_text(_scenario_lines(3000))
    out.parent.mkdir()
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen(_record_cmd(scenarios, out), env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (out.exists() and out.stat().st_size > 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the recorder finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _group_alive(proc.pid) == []
    assert list(tmp.iterdir()) == []
    assert sorted(p.name for p in out.parent.iterdir()) == [".rows.jsonl.agentworld", "rows.jsonl"]
    started = {json.loads(line)["id"].rpartition("-t")[0] for line in out.read_text().splitlines()
               if line.endswith("}")}
    assert 0 < len(started) < 3000
    first = scenarios.read_text().splitlines()[:len(started) + 2]  # resume the part begun, and two more
    scenarios.write_text("\n".join(first) + "\n")
    subprocess.run(_record_cmd(scenarios, out, "--resume"), check=True, capture_output=True, env=env)
    ids = [s.id for s in load_samples([out])]
    assert sorted(ids) == sorted(f"research-{i}-t{t}" for i in range(len(first)) for t in range(1, 7))


@pytest.mark.parametrize(("call", "side_effects"), [
    ({"tool_name": "web_search", "arguments": {"query": "json"}}, False),
    ({"tool_name": "web_extractor", "arguments": {"url": JSON_URL, "goal": "dumps"}}, False),
    ({"tool_name": "dict_memory", "arguments": {"operation": "retrieve", "key_list": ["a"]}}, False),
    ({"tool_name": "dict_memory", "arguments": {"operation": "retrieve_all"}}, False),
    ({"tool_name": "dict_memory", "arguments": {"operation": "add", "dict": {"a": 1}}}, True),
    ({"tool_name": "dict_memory", "arguments": {"operation": "update", "dict": {"a": 2}}}, True),
    ({"tool_name": "dict_memory", "arguments": {"operation": "remove", "key_list": ["a"]}}, True),
    ({"tool_name": "dict_memory", "arguments": {"operation": "remove_all"}}, True),
    ({"tool_name": "browse", "arguments": {}}, False),
])
def test_routing_runs_every_call_for_real_and_marks_memory_writes(call: dict[str, object],
                                                                   side_effects: bool) -> None:
    from agentworld.domains.actions import format_json_action
    from agentworld.domains.search.routing import decide

    decision = decide(format_json_action(call))
    assert (decision.route, decision.side_effects) == ("real", side_effects), decision
    assert decide("look it up").route == "real"


def test_environment_steps_equal_the_recorded_rows(tmp_path: Path) -> None:
    from agentworld.domains.base import RealEnvironment, resolve
    from agentworld.domains.search import PLUGIN
    from agentworld.errors import AgentWorldError
    from agentworld.schema import strip_marker

    scenarios, out = tmp_path / "s.jsonl", tmp_path / "rows.jsonl"
    scenarios.write_text(_scenario_lines(1))
    assert runner.invoke(app, ["record", "search", "--scenarios", str(scenarios), "--out", str(out),
                               "--docs", str(DOCS)]).exit_code == 0
    last = load_samples([out])[-1]
    assert PLUGIN.environment is not None
    env = resolve(PLUGIN.environment)(0, docs=DOCS)
    assert isinstance(env, RealEnvironment) and env.initial_observation() == ""
    for action, observation in zip(last.prompt, last.response, strict=True):
        assert env.step(action) == strip_marker(observation)
    env.close()
    env.close()
    with pytest.raises(AgentWorldError, match="closed"):
        env.step(last.prompt[0])


def test_plugin_is_light_and_every_reference_resolves() -> None:
    code = ("import sys, agentworld.domains.search as d; "
            "print(sorted(m for m in ('bm25s', 'lxml', 'agentworld.envs.search_index') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert done.stdout.strip() == "[]"
    from agentworld.domains.base import RecorderCommand, resolve
    from agentworld.domains.search import PLUGIN

    refs = [PLUGIN.rules, PLUGIN.retrieval_keys, PLUGIN.environment, PLUGIN.routing, PLUGIN.recorder,
            PLUGIN.actions]
    assert all(r is not None and resolve(r) is not None for r in refs)
    assert isinstance(resolve(PLUGIN.recorder or ""), RecorderCommand)


def _corpus() -> list[BenchSample]:
    return load_samples([Path(str(resources.files("agentworld.domains.search") / "corpus.jsonl"))])


def test_shipped_scenarios_and_corpus_agree() -> None:
    from agentworld.domains.search.record import load_search_scenarios, scenarios_file

    train = load_search_scenarios(scenarios_file("train"))
    heldout = load_search_scenarios(scenarios_file("heldout"))
    rows = _corpus()
    assert len(rows) == sum(len(s.calls) for s in train) >= 300
    assert {s.id.rpartition("-t")[0] for s in rows} == {s.name for s in train}
    assert not {s.name for s in train} & {s.name for s in heldout} and len(heldout) >= 8


def test_search_rules_score_urls_and_titles_exactly_and_give_the_frame_nothing() -> None:
    from agentworld.eval.rules.scores import frame_only_prediction, score_rules

    sample = next(s for s in _corpus() if s.id == "json-custom-encoder-t1")
    truth = sample.ground_truth
    perfect = score_rules("search", truth, truth, sample)
    assert perfect.overall == 100.0 and perfect.verified and perfect.details["rules"] == "search"
    assert perfect.details["tiers"] == {"deterministic": 20, "environment": 10}
    wrong_url = truth.replace("https://docs.python.org/3/library/json.html", "https://docs.python.org/3/j.html")
    assert wrong_url != truth
    hurt = score_rules("search", wrong_url, truth, sample)
    assert not hurt.verified and hurt.deterministic == 95.0 and hurt.structure == 100.0
    skeleton = frame_only_prediction("search", truth, sample)
    assert skeleton.startswith("[1]\nDate: N/A\n\n[2]\nDate: N/A")
    assert score_rules("search", skeleton, truth, sample).overall == 0.0
    write = next(s for s in _corpus() if s.id == "json-custom-encoder-t3")
    message = frame_only_prediction("search", write.ground_truth, write)
    assert message == "Successfully added items of ['json_default'] to memory."
    assert score_rules("search", message, write.ground_truth, write).overall == 100.0


def test_retrieval_rewrites_a_recorded_memory_write_for_the_current_keys() -> None:
    from agentworld.domains.actions import format_tool_action
    from agentworld.domains.retrieval_keys import retrieval_keys

    keys = retrieval_keys("search")
    action = format_tool_action("dict_memory", {"operation": "add", "dict": {"b": 1, "c": 2}})
    recorded = f"{OBSERVATION_MARKER}\nSuccessfully added items of ['a'] to memory."
    assert keys.adapt(recorded, action, action, []) == (
        f"{OBSERVATION_MARKER}\nSuccessfully added items of ['b', 'c'] to memory.")
    search = format_tool_action("web_search", {"query": "JSON encoder"})
    assert keys.key(search).group == "web_search" and "q:json" in keys.key(search).tokens
    assert keys.adapt(recorded, search, search, []) == recorded


def test_search_corpus_holds_the_rule_tier_contract() -> None:
    from agentworld.eval.rules.contract import measure_contract, trajectory_of

    rows = _corpus()
    keep = sorted({trajectory_of(s) for s in rows})[::3]  # a third of the trajectories keeps this quick
    report = measure_contract([s for s in rows if trajectory_of(s) in keep])
    assert report.violations() == [], report
    assert report.retrieval is not None and report.retrieval > report.baselines["repeat_previous"] + 10


@pytest.mark.skipif(default_docs_dir() is None, reason="python3-doc is not installed (install.sh has it)")
def test_the_shipped_corpus_replays_on_the_installed_python_docs() -> None:
    from agentworld.domains.search.env import open_environment
    from agentworld.schema import strip_marker

    finals = [s for s in _corpus() if s.turn_idx == len(s.prompt)]
    same = total = 0
    for sample in finals:
        env = open_environment()
        for action, observation in zip(sample.prompt, sample.response, strict=True):
            same += env.step(action) == strip_marker(observation)
            total += 1
        env.close()
    assert total == len(_corpus()) and same / total >= 0.95, f"{same}/{total} observations reproduced"


def test_the_simulator_sends_a_search_call_in_the_recorded_row_form() -> None:
    from agentworld.domains.hooks import domain_actions
    from agentworld.sim.history import parse_action

    row = next(s for s in _corpus() if s.id == "json-custom-encoder-t1").action
    call = {"tool_name": "web_search", "arguments": {"query": "json dumps custom object default function"}}
    assert row == "**Action:**\n```json\n" + json.dumps(call) + "\n```"
    actions = domain_actions("search")
    for given in (call, json.dumps(call), row):
        assert actions.render(parse_action("search", given)) == row
    assert actions.render(parse_action("search", "look it up")) == "look it up"

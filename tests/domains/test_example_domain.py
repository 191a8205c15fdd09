"""A domain added from outside ``agentworld`` (tests/example_domain) crosses the seam end to end.

The package is the one docs/adding-a-domain.md shows: a plugin, its prompts, rules and retrieval keys.
Registered, it has a registry record with its own prompts, its rules score predictions, the retrieval
model answers from its corpus, and ``agentworld eval run`` scores it with its rules in a subprocess
that knows it only through ``AGENTWORLD_DOMAIN_PACKAGES``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.domains import DOMAINS, domain_names, load_domains
from agentworld.domains.base import DomainPlugin, plugin_of, plugins, register_domain, unregister_domain
from agentworld.domains.retrieval_keys import retrieval_keys
from agentworld.errors import DataError
from agentworld.eval.rules.scores import frame_only_prediction, score_rules
from agentworld.schema import OBSERVATION_MARKER, Trajectory, Turn, load_samples, strip_marker

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = [
    [("set colour blue", "OK"), ("get colour", "colour = blue"), ("get size", "(no such key: size)")],
    [("set size 42", "OK"), ("set colour red", "OK"), ("list", "colour = red\nsize = 42")],
    [("set fruit pear", "OK"), ("del fruit", "OK"), ("get fruit", "(no such key: fruit)")],
    [("set city Oslo", "OK"), ("get city", "city = Oslo"), ("list", "city = Oslo")],
]


def trajectory(n: int, turns: list[tuple[str, str]], prompt: str = "") -> Trajectory:
    return Trajectory(id=f"notes-{n}", domain="notes", system_prompt=prompt,
                      turns=tuple(Turn(action=a, observation=f"{OBSERVATION_MARKER}\n{o}") for a, o in turns))


@pytest.fixture
def notes() -> Iterator[DomainPlugin]:
    from example_domain import PLUGIN

    register_domain(PLUGIN)
    yield plugins()["notes"]
    unregister_domain("notes")


def test_a_registered_domain_has_a_record_with_its_own_prompts(notes: DomainPlugin) -> None:
    assert notes.package == "example_domain"
    assert domain_names()[-1] == "notes" and "notes" in DOMAINS and "notes" in load_domains()
    domain = DOMAINS["notes"]
    assert (domain.display, domain.plugin) == ("Notes", notes)
    assert domain.system_prompt.startswith("# Role\n\nYou are a world model of a key-value notebook.")
    assert "<final_evaluation>" in domain.judge_system_prompt
    unregister_domain("notes")
    assert "notes" not in DOMAINS and "notes" not in domain_names()
    with pytest.raises(DataError, match="unknown domain 'notes'"):
        DOMAINS["notes"]


def test_a_plugin_without_prompts_or_an_unimportable_package_is_one_clear_error(tmp_path: Path) -> None:
    register_domain(DomainPlugin(name="ghost", display="Ghost", package="agentworld.domains"))
    try:
        with pytest.raises(DataError, match=r"domain 'ghost': its package 'agentworld.domains' has no "
                                            r"prompts/system_prompt.txt"):
            DOMAINS["terminal"]
    finally:
        unregister_domain("ghost")
    assert DOMAINS["terminal"].name == "terminal"
    env = {**os.environ, "AGENTWORLD_DOMAIN_PACKAGES": "example_domain,no_such_package",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    done = subprocess.run([sys.executable, "-m", "agentworld", "record", "--help"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == ("error: AGENTWORLD_DOMAIN_PACKAGES names 'no_such_package', which is not "
                           "importable (no module 'no_such_package')\n")


def test_its_rules_score_predictions(notes: DomainPlugin) -> None:
    sample = trajectory(0, SESSIONS[0]).samples()[1]  # get colour, after set colour blue
    right = score_rules("notes", "colour = blue", sample.ground_truth, sample)
    assert right.details["rules"] == "notes" and right.details["tiers"] == {"deterministic": 1}
    assert right.verified and right.overall == 100
    wrong = score_rules("notes", "colour = green", sample.ground_truth, sample)
    assert not wrong.verified and wrong.deterministic == 0 and wrong.structure == 100
    shapeless = score_rules("notes", "colour is green\nOK", sample.ground_truth, sample)
    assert shapeless.structure == 25 and shapeless.overall < wrong.overall
    assert frame_only_prediction("notes", sample.ground_truth, sample) == ""
    unregister_domain("notes")
    assert score_rules("notes", "colour = blue", sample.ground_truth, sample).details["rules"] == "generic"


def test_every_accessor_takes_the_plugin_itself_registered_or_not() -> None:
    """``plugin_of`` is the one lookup: a plugin object is used as is (no registration, no name lookup),
    a registered name gives its plugin, an unknown name a bare plugin with every default."""
    from agentworld.domains.error_patterns import COMMON_ERRORS
    from agentworld.domains.failures import error_patterns
    from agentworld.domains.hooks import TEXT_ACTIONS, domain_actions
    from agentworld.domains.rules import GENERIC, rules_for
    from example_domain import PLUGIN
    from example_domain.keys import KEYS
    from example_domain.rules import RULES

    assert "notes" not in domain_names() and plugin_of(PLUGIN) is PLUGIN
    assert rules_for(PLUGIN) == (RULES, True) and retrieval_keys(PLUGIN) is KEYS
    assert rules_for("notes") == (GENERIC, False) and retrieval_keys("notes") is not KEYS
    bare = plugin_of("notes")
    assert (bare.name, bare.display, bare.rules, bare.environment) == ("notes", "notes", None, None)
    assert domain_actions(bare) is TEXT_ACTIONS and error_patterns(bare) == COMMON_ERRORS
    registered = register_domain(PLUGIN)
    try:
        assert plugin_of("notes") is registered and rules_for("notes") == (RULES, True)
        assert plugin_of("terminal") is plugins()["terminal"]
    finally:
        unregister_domain("notes")


def test_its_retrieval_keys_group_neighbours_by_verb(notes: DomainPlugin) -> None:
    from agentworld.models import RetrievalIndex
    from example_domain.keys import KEYS

    assert retrieval_keys("notes") is KEYS
    assert KEYS.key("get  colour").text == "get colour" and KEYS.key("get colour").group == "get"
    index = RetrievalIndex([trajectory(n, turns) for n, turns in enumerate(SESSIONS)])
    assert {t.group for t in index.transitions} == {"set", "get", "del", "list"}
    query = trajectory(9, [("set colour blue", "OK"), ("del colour", "OK")]).samples()[1]
    assert index.nearest(query)[0].action == "del fruit"  # not the textually closer "get colour"


def test_record_lists_only_domains_with_a_recorder(notes: DomainPlugin) -> None:
    text = CliRunner().invoke(app, ["record", "--help"]).output
    listed = [line.split()[0] for line in text.split("Commands:")[1].splitlines() if line.startswith("  ")]
    assert listed == [name for name in domain_names() if plugins()[name].recorder]
    assert {"terminal", "mcp", "search", "notes"} <= set(listed)
    assert not {"android", "os"} & set(listed)  # prompt-only: nothing real to record
    notes_help = CliRunner().invoke(app, ["record", "notes", "--help"]).output
    assert "--scenarios <path>" in notes_help and "--overwrite" in notes_help
    unregister_domain("notes")
    result = CliRunner().invoke(app, ["record", "notes", "--help"])
    assert result.exit_code == 2 and "No such command 'notes'" in result.output


def cli_env(packages: str = "example_domain") -> dict[str, str]:
    """A CLI subprocess's environment, which names the example domain in ``AGENTWORLD_DOMAIN_PACKAGES``."""
    return {**os.environ, "AGENTWORLD_DOMAIN_PACKAGES": packages,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}


def agentworld(*args: str, packages: str = "example_domain") -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess that knows the example domain only from ``AGENTWORLD_DOMAIN_PACKAGES``."""
    return subprocess.run([sys.executable, "-m", "agentworld", *args], env=cli_env(packages),
                          capture_output=True, text=True, timeout=300, check=False)


def write_rows(path: Path) -> Path:
    """The four sessions as AgentWorldBench rows of the notes domain (``task`` is ``notes``)."""
    prompt = (ROOT / "tests/example_domain/prompts/system_prompt.txt").read_text("utf-8")
    rows = [s.to_row() for n, turns in enumerate(SESSIONS) for s in trajectory(n, turns, prompt).samples()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_data_convert_and_process_take_its_rows(tmp_path: Path) -> None:
    """The data pipeline asks the registry, so rows of a domain from outside the package go through."""
    rows = write_rows(tmp_path / "notes.jsonl")
    unified = tmp_path / "unified.jsonl"
    done = agentworld("data", "convert", "--data", str(rows), "--out", str(unified))
    assert done.returncode == 0, done.stderr
    trajectories = [json.loads(line) for line in unified.read_text().splitlines()]
    assert [(t["id"], t["domain"], len(t["turns"])) for t in trajectories] == [
        (f"notes-{n}", "notes", 3) for n in range(4)]

    config = tmp_path / "pipeline.json"
    out = tmp_path / "out" / "bench.jsonl"
    config.write_text(json.dumps({"inputs": [{"path": str(unified)}],
                                  "steps": ["skip_retry_cycles", "drop_no_change", "expand", "dedup", "mask"],
                                  "output": {"format": "agentworld-bench", "path": str(out)}}))
    done = agentworld("data", "process", "--config", str(config), "--no-progress", "-j", "2")
    assert done.returncode == 0, done.stderr
    back = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["task"]) for r in back] == [(f"notes-{n}-t{t}", "notes") for n in range(4)
                                                    for t in (1, 2, 3)]
    assert json.loads((out.parent / "stats.json").read_text())["dataset"]["domains"] == {"notes": 12}

    stranger = agentworld("data", "convert", "--data", str(rows), "--out", str(tmp_path / "x"), packages="")
    assert (stranger.returncode, stranger.stdout, stranger.stderr.count("\n")) == (2, "", 1), stranger.stderr
    assert stranger.stderr.startswith(f"error: {rows}:1, sample 'notes-0-t1', field 'task': unknown domain "
                                      "'notes'; known: mcp, search, terminal, swe, android, web, os")


def test_serve_mock_serves_its_rows_and_eval_run_judges_them_with_its_prompt(tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "notes_test.jsonl")
    server = subprocess.Popen([sys.executable, "-m", "agentworld", "serve", "mock", "--data", str(rows)],
                              env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        match = re.search(r"(http://127\.0\.0\.1:\d+/v1)", server.stdout.readline())
        assert match, "serve mock did not start"
        url = match.group(1)
        out = tmp_path / "run"
        done = agentworld("eval", "run", "--data", str(rows), "--model", "mock", "--model-base-url", url,
                          "--judge-base-url", url, "--judge-model", "mock", "--out", str(out),
                          "--no-progress")
        assert done.returncode == 0, done.stderr
        import httpx

        log = httpx.get(url.removesuffix("/v1") + "/_mock/requests", params={"full": 1}, timeout=30).json()
    finally:
        server.kill()
        server.wait()
    world = [e for e in log if e["kind"] == "world"]
    assert len(world) == 12 and all(e["matched"] for e in world)  # every row's truth served
    judged = [e for e in log if e["kind"] != "world"]
    assert len(judged) == 12
    assert all(e["messages"][0]["content"].startswith("# Role\n\nYou judge a simulated key-value notebook.")
               for e in judged)
    scores = json.loads((out / "scores.json").read_text())
    assert scores["domains"]["notes"]["valid"] == 12 and scores["domains"]["notes"]["total_score"] == 100
    assert scores["rules"]["notes"]["overall"] == 100


def test_train_rl_trains_on_its_rows_with_its_rules(tmp_path: Path) -> None:
    """One GSPO step on a tiny local model: the rows load, and the rule reward scores with its rules."""
    pytest.importorskip("trl", reason="needs the train extra: bash install.sh --train")
    from agentworld.train.tiny import build_tiny

    config = tmp_path / "rl.yaml"
    config.write_text(json.dumps({
        "model": str(build_tiny(tmp_path / "tiny", hidden_size=32)), "output_dir": str(tmp_path / "out"),
        "data": str(write_rows(tmp_path / "notes.jsonl")), "reward": "rule", "max_steps": 1,
        "num_generations": 2, "per_device_train_batch_size": 2, "steps_per_generation": 1,
        "max_completion_length": 8, "use_cpu": True, "save_final": False}))
    dry = agentworld("train", "rl", "--config", str(config), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["samples"] == 12
    done = agentworld("train", "rl", "--config", str(config))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout[done.stdout.rindex("\n{\n"):])  # after TRL's log lines
    assert result["steps"] == 1 and len(result["rewards"]) == 1
    assert "'rewards/rule_reward/mean'" in done.stdout


def test_record_then_eval_run_in_a_subprocess_that_knows_it_from_the_environment(tmp_path: Path) -> None:
    scenarios = tmp_path / "scenarios.json"
    scenarios.write_text(json.dumps([{"name": f"notes-{n}", "actions": [a for a, _ in turns]}
                                     for n, turns in enumerate(SESSIONS)]))
    recorded = tmp_path / "recorded.jsonl"
    done = agentworld("record", "notes", "--scenarios", str(scenarios), "--out", str(recorded))
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in recorded.read_text().splitlines()]
    observations = [strip_marker(r["response"][r["turn_idx"] - 1]) for r in rows]
    assert observations == [o for turns in SESSIONS for _, o in turns]  # the notebook answers as written
    again = agentworld("record", "notes", "--scenarios", str(scenarios), "--out", str(recorded))
    assert again.returncode == 2 and again.stderr.startswith("error: ") and "--overwrite" in again.stderr
    with pytest.raises(DataError, match="unknown domain 'notes'"):
        load_samples([recorded], known_domains=domain_names())  # this process has no notes plugin

    corpus, data = tmp_path / "corpus.jsonl", tmp_path / "notes_test.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows if not r["id"].startswith("notes-3")))
    data.write_text("".join(json.dumps(r) + "\n" for r in rows if r["id"].startswith("notes-3")))
    out = tmp_path / "run"
    done = agentworld("eval", "run", "--data", str(data), "--model", "retrieval", "--model-corpus",
                      str(corpus), "--out", str(out), "--no-judge", "--no-progress")
    assert done.returncode == 0, done.stderr
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [p["source"] for p in predictions] == ["retrieval"] * 3
    assert not any(p["error"] for p in predictions)
    rules = [json.loads(line) for line in (out / "rules.jsonl").read_text().splitlines()]
    assert [r["rule"]["details"]["rules"] for r in rules] == ["notes"] * 3  # its own rules, not generic
    # "get city" answered with the neighbour's "colour = blue": the session set city, so that is wrong
    get_city = next(r["rule"] for r in rules if r["id"] == "notes-3-t2")
    assert get_city["details"]["tiers"] == {"deterministic": 1} and not get_city["verified"]
    scores = json.loads((out / "scores.json").read_text())
    assert set(scores["rules"]) == {"notes"} and scores["rule_tier"]["domains"]["notes"]["n"] == 3


def test_the_docs_page_shows_this_example_as_it_is() -> None:
    page = (ROOT / "docs/adding-a-domain.md").read_text("utf-8")
    blocks = re.findall(r"\*\*`(tests/example_domain/[^`]+)`\*\*\n\n(`{3,})\w*\n(.*?)\2\n", page, re.S)
    shown = {name: text for name, _, text in blocks}
    files = {p.relative_to(ROOT).as_posix(): p for p in (ROOT / "tests/example_domain").rglob("*")
             if p.is_file() and "__pycache__" not in p.parts}
    assert sorted(shown) == sorted(files), "the page shows every file of the example, and only those"
    for name, text in shown.items():
        assert text == files[name].read_text("utf-8"), f"docs/adding-a-domain.md shows an old {name}"


def resolves(dotted: str) -> bool:
    """Whether ``agentworld.a.b.Name`` names a module, or an attribute of the longest importable prefix."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            if not hasattr(value, name):
                return False
            value = getattr(value, name)
        return True
    return False


def test_the_docs_page_names_every_plugin_field_and_cites_only_what_exists() -> None:
    """The steps the page gives are the steps: its field table is ``DomainPlugin``'s fields, and every
    module, name and file it cites exists (a move that leaves the page behind fails here)."""
    import dataclasses

    page = (ROOT / "docs/adding-a-domain.md").read_text("utf-8")
    table = page.split("## What a plugin says\n\n")[1].split("\n\n")[0].splitlines()[2:]
    documented = [name for row in table for name in re.findall(r"`(\w+)`", row.split("|")[1])]
    assert sorted(documented) == sorted(f.name for f in dataclasses.fields(DomainPlugin))
    cited = sorted(set(re.findall(r"`(agentworld(?:\.\w+)+)", page)))
    assert len(cited) > 15 and [c for c in cited if not resolves(c)] == []
    files = sorted(set(re.findall(r"`((?:src/agentworld/|tests/|domains/)[\w/.]+)`", page)))
    missing = [f for f in files if not (ROOT / f).exists() and not (ROOT / "src/agentworld" / f).exists()]
    assert len(files) > 10 and missing == []
    assert "schema.py" not in page and "Nothing else is edited" in page
    assert not resolves("agentworld.schema.DOMAIN_NAMES") and resolves("agentworld.domains.BENCHMARK_DOMAINS")

"""Domain registry: built-in prompt texts, official-style overrides, located errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentworld.domains import BENCHMARK_DOMAINS, DOMAINS, get_domain, load_domains
from agentworld.errors import DataError
from agentworld.models.parsing import SCORE_DIMENSIONS, parse_judge
from agentworld.schema import OBSERVATION_MARKER

EXAMPLE = re.compile(r"<predicted_observation>\n(.*?)\n</predicted_observation>", re.DOTALL)
JSON_FENCE = re.compile(r"```json\n(.*?)\n```", re.DOTALL)


def test_every_domain_is_registered_in_order() -> None:
    registry = load_domains()
    assert registry.names() == list(BENCHMARK_DOMAINS)
    assert [d.name for d in registry] == list(BENCHMARK_DOMAINS)
    for name in BENCHMARK_DOMAINS:
        assert name in registry
        assert registry[name].prompts_source == "builtin"
        assert get_domain(name) == DOMAINS[name]


@pytest.mark.parametrize("name", BENCHMARK_DOMAINS)
def test_system_prompt_is_complete(name: str) -> None:
    text = load_domains()[name].system_prompt
    assert "TODO" not in text
    assert 40 <= len(text.splitlines()) <= 125
    assert "<predicted_observation>" in text and "</predicted_observation>" in text
    assert OBSERVATION_MARKER in text
    # the few-shot examples obey the output contract themselves
    examples = EXAMPLE.findall(text)
    assert examples, "no few-shot example"
    for body in examples:
        assert body.startswith(OBSERVATION_MARKER + "\n")
        assert body[len(OBSERVATION_MARKER):].strip()


@pytest.mark.parametrize("name", BENCHMARK_DOMAINS)
def test_judge_prompt_is_complete(name: str) -> None:
    domain = load_domains()[name]
    text = domain.judge_system_prompt
    assert "TODO" not in text
    assert 40 <= len(text.splitlines()) <= 100
    assert "<final_evaluation>" in text and "</final_evaluation>" in text
    assert domain.judge_tag == "final_evaluation"
    for dim in SCORE_DIMENSIONS:
        assert f"**{dim.capitalize()}**" in text, dim
    lowered = text.lower()
    for tier in ("deterministic content", "pre-existing environment content", "runtime metadata"):
        assert tier in lowered, tier
    # the verdict example in the prompt is itself a parseable verdict
    verdict = parse_judge(text[text.index("<final_evaluation>"):])
    assert set(verdict.scores) == set(SCORE_DIMENSIONS)
    assert all(1 <= v <= 5 for v in verdict.scores.values())


def test_prompts_differ_between_domains() -> None:
    registry = load_domains()
    assert len({d.system_prompt for d in registry}) == len(BENCHMARK_DOMAINS)
    assert len({d.judge_system_prompt for d in registry}) == len(BENCHMARK_DOMAINS)


def test_terminal_examples_follow_the_contract_turn_format() -> None:
    text = load_domains()["terminal"].system_prompt
    assert "**Current State:**\nroot@" in text
    actions = JSON_FENCE.findall(text)
    assert len(actions) >= 2
    for block in actions:
        batches = json.loads(block)
        assert block == json.dumps(batches, indent=2, ensure_ascii=False)
        assert all(set(b) == {"keystrokes", "duration"} for b in batches)
    for body in EXAMPLE.findall(text):
        screen = body[len(OBSERVATION_MARKER) + 1:].splitlines()
        assert screen[0].startswith("root@") and "# " in screen[0]
        assert all(line == line.rstrip() for line in screen)
        assert re.fullmatch(r"root@[0-9a-f]+:/\S*#", screen[-1])


def test_override_folder_replaces_only_the_files_it_has(tmp_path: Path) -> None:
    (tmp_path / "terminal").mkdir()
    (tmp_path / "terminal" / "judge_system_prompt.txt").write_text("official terminal judge", "utf-8")
    builtin = load_domains()
    registry = load_domains(tmp_path)
    terminal = registry["terminal"]
    assert terminal.judge_system_prompt == "official terminal judge"
    assert terminal.system_prompt == builtin["terminal"].system_prompt
    assert terminal.prompts_source == str(tmp_path)
    for name in BENCHMARK_DOMAINS:
        if name != "terminal":
            assert registry[name] == builtin[name]
            assert registry[name].prompts_source == "builtin"


def test_override_folder_accepts_str_and_both_files(tmp_path: Path) -> None:
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "system_prompt.txt").write_text("sys", "utf-8")
    (tmp_path / "mcp" / "judge_system_prompt.txt").write_text("judge", "utf-8")
    mcp = load_domains(str(tmp_path))["mcp"]
    assert (mcp.system_prompt, mcp.judge_system_prompt) == ("sys", "judge")
    assert mcp.prompts_source == str(tmp_path)


def test_folder_matching_no_domain_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "defi").mkdir()
    (tmp_path / "defi" / "judge_system_prompt.txt").write_text("x", "utf-8")
    (tmp_path / "terminal").mkdir()  # a domain folder without prompt files does not count
    with pytest.raises(DataError, match="terminal") as err:
        load_domains(tmp_path)
    assert err.value.path == str(tmp_path)
    assert "terminal" in str(err.value)


def test_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="nope") as err:
        load_domains(tmp_path / "nope")
    assert err.value.path == str(tmp_path / "nope")


def test_unknown_domain_names_the_known_ones() -> None:
    with pytest.raises(DataError, match="'defi'") as err:
        load_domains()["defi"]
    message = str(err.value)
    assert "'defi'" in message
    for name in BENCHMARK_DOMAINS:
        assert name in message
    assert err.value.field == "task"
    assert "defi" not in load_domains()


def test_clean_marker_drops_the_observation_marker() -> None:
    domain = load_domains()["terminal"]
    assert domain.clean_marker(f"{OBSERVATION_MARKER}\nroot@abc:/app#\n") == "root@abc:/app#"
    assert domain.marker == OBSERVATION_MARKER
    assert domain.response_tag == "predicted_observation"

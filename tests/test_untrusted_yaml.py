"""YAML and JSON from untrusted files: bounded work before any walk, JSON's types only.

Issue 31: nine lines of anchors in a world's ``controls/`` hung ``synth check``, ``serve mcp --world``
and ``train rollout --world`` for minutes, because the depth check (and every consumer after it)
walked the alias-expanded tree. The document is now measured on YAML's node graph, each node once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentworld.configfile import load_config_file
from agentworld.domains.spec import ControlSpec, load_control_spec
from agentworld.errors import DataError
from agentworld.inputs import MAX_DEPTH, MAX_EXPANSION, parse_json, parse_yaml
from synth_worlds import TASK, WORLD, write


def bomb(width: int = 10, levels: int = 9, leaf: str = "x") -> str:
    """The issue's reproducer: ``a: &a [x ×10]``, ``b: &b [*a ×10]``, … (``width ** levels`` leaves)."""
    names = "abcdefghijklmnopqrstuvwxyz"
    lines = [f"{names[0]}: &{names[0]} [{', '.join([leaf] * width)}]"]
    lines += [f"{names[n]}: &{names[n]} [{', '.join([f'*{names[n - 1]}'] * width)}]"
              for n in range(1, levels)]
    return "\n".join(lines) + "\n"


def merge_bomb(width: int = 10, levels: int = 8) -> str:
    """Merge keys copy the merged entries into each mapping, so the loader itself multiplies them."""
    lines = ["a0: &a0 {" + ", ".join(f"k{i}: x" for i in range(width)) + "}"]
    lines += [f"a{n}: &a{n} {{<<: [{', '.join([f'*a{n - 1}'] * width)}]}}" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("text", [bomb(), bomb(leaf="'" + "y" * 20_000 + "'", levels=4), merge_bomb()],
                         ids=["lists", "strings", "merge-keys"])
def test_an_alias_bomb_is_refused_at_once_naming_the_file_and_the_limit(text: str) -> None:
    start = time.monotonic()
    with pytest.raises(DataError, match=rf"c\.yaml:\d+: its aliases expand to more than .*the limit: "
                                        rf"{MAX_EXPANSION:,} beyond the {len(text):,} characters"):
        parse_yaml(text, path="c.yaml")
    assert time.monotonic() - start < 2


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(DataError, match=r"c\.yaml:1: an alias names a node that holds it"):
        parse_yaml("a: &a [1, *a]\n", path="c.yaml")


def test_shared_anchors_within_the_limit_still_load() -> None:
    text = "base: &b {rate: 0.5, tools: [a, b]}\nfirst: *b\nmerged: {<<: *b, rate: 1.0}\nmany: [" + \
           ", ".join(["*b"] * 1000) + "]\n"
    data = parse_yaml(text)
    assert data["first"] == {"rate": 0.5, "tools": ["a", "b"]} and data["merged"]["rate"] == 1.0
    assert len(data["many"]) == 1000
    deep = "a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n"
    assert parse_yaml(deep)["a"]
    with pytest.raises(DataError, match="nested deeper"):
        parse_yaml("a: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n")


@pytest.mark.parametrize(("text", "expected"), [
    ("a: !!binary aGVsbG8=\n", "binary is not supported"),
    ("a: !!set {x, y}\n", "set is not supported"),
    ("a: !!omap [x: 1]\n", "omap is not supported"),
    ("a: .nan\n", "'.nan' is not a finite number"),
    ("a: -.inf\n", "not a finite number"),
    ("a: 1.0e+400\n", "not a finite number"),
    ("a: 0x" + "f" * 400 + "\n", "an integer outside 64 bits"),
    ("a: " + "9" * 5000 + "\n", "an integer outside 64 bits"),
    ("a: !!python/object/apply:os.system ['true']\n", "could not determine a constructor"),
    ("a: 1\n---\nb: 2\n", "expected a single document"),
    ("a: '\x00'\n", "c.yaml:1: malformed YAML: special characters are not allowed"),
])
def test_yaml_holds_json_types_only_and_every_error_is_one_line(text: str, expected: str) -> None:
    with pytest.raises(DataError, match=expected) as info:
        parse_yaml(text, path="c.yaml")
    assert "\n" not in str(info.value)


def test_a_timestamp_stays_the_string_it_was_written_as() -> None:
    assert parse_yaml("day: 2001-12-14\nat: 2001-12-14T21:59:43Z\n") == {"day": "2001-12-14",
                                                                        "at": "2001-12-14T21:59:43Z"}


@pytest.mark.parametrize("text", ["1e400", "[NaN]", '{"a": -Infinity}', '"\\ud800"', "9" * 400])
def test_json_that_no_json_writer_can_hold_is_malformed(text: str) -> None:
    with pytest.raises(DataError, match=r"x\.json:1: malformed JSON"):
        parse_json(text, path="x.json")


def test_every_yaml_reader_refuses_the_bomb(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(bomb() + "faults: []\n")
    for read in (lambda p: load_control_spec(p), lambda p: load_config_file(ControlSpec, p)):
        start = time.monotonic()
        with pytest.raises(DataError, match="its aliases expand"):
            read(tmp_path / "c.yaml")
        assert time.monotonic() - start < 2


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentworld", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "300"})


def test_the_commands_that_read_a_world_refuse_a_bomb_in_its_controls(tmp_path: Path) -> None:
    world = tmp_path / "world"
    world.mkdir()
    write(world, WORLD, [TASK])
    (world / "controls").mkdir()
    (world / "controls" / "flaky.yaml").write_text(bomb() + "faults: []\n")
    where = "world/controls/flaky.yaml:"
    runs = [("serve", "mcp", "--world", "world", "--model", "scripted"),
            ("train", "rollout", "--world", "world", "--agent-base-url", "http://127.0.0.1:9/v1",
             "--agent-model", "a", "--model-base-url", "http://127.0.0.1:9/v1", "--model", "m",
             "--out", "ep.jsonl")]
    for args in runs:
        start = time.monotonic()
        done = _cli(*args, cwd=tmp_path)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, (args, done.stderr[-2000:])
        assert where in lines[0] and f"the limit: {MAX_EXPANSION:,}" in lines[0], lines[0]
        assert time.monotonic() - start < 30
    checked = _cli("synth", "check", "world", "--out", "checked", cwd=tmp_path)  # a rejected world, reported
    assert checked.returncode == 0 and "Traceback" not in checked.stderr, checked.stderr[-2000:]
    report = json.loads((tmp_path / "checked" / "report.json").read_text())
    assert "its aliases expand" in json.dumps(report)

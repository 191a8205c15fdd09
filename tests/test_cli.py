"""The single ``agentworld`` command: sub-commands mounted, demo-style run with rules and report."""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from agentworld.cli import COMMANDS, app, load_command
from agentworld.cli_click import Context
from agentworld.cli_support import OLD, config_of
from agentworld.corpus import corpus_path
from agentworld.io import read_journal

runner = CliRunner()


def test_help_lists_every_command() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    commands = result.output.split("Commands:")[1].splitlines()
    listed = [line.split()[0] for line in commands if line.startswith("  ") and line[2] != " "]
    assert listed == ["demo", "record", "eval", "data", "serve", "train", "synth", "shell", "plan",
                      "optimize", "doctor"]
    assert "mock-server" not in result.output and "rollout" not in listed  # old names: hidden aliases
    groups = {"eval": ["run", "infer", "judge", "score", "report", "probes", "compare", "closed-loop-truth"],
              "record": ["terminal", "mcp", "search"],
              "data": ["convert", "process", "stats", "export"], "serve": ["mcp", "http", "mock"],
              "train": ["cpt", "sft", "rl", "rollout"], "demo": ["train"], "synth": ["envs"],
              "optimize": ["prompts"]}
    for group, commands in groups.items():
        text = runner.invoke(app, [group, "--help"]).output
        for command in commands:
            assert runner.invoke(app, [group, command, "--help"]).exit_code == 0, (group, command)
            assert f"  {command} " in text or f"  {command}\n" in text, (group, command)
    for alias, target in (("mock-server", ["serve", "mock"]), ("rollout", ["train", "rollout"])):
        old = runner.invoke(app, [alias, "--help"])
        assert old.exit_code == 0 and "--help" in old.output
        assert old.output.split("Options:")[1] == runner.invoke(app, [*target, "--help"]).output.split(
            "Options:")[1]


def test_retrieval_run_scores_rules_and_writes_report(tmp_path: Path) -> None:
    """Offline path of the demo on shipped real recordings: retrieval model, rule tier, HTML report."""
    rows = [json.loads(line) for line in corpus_path("terminal").read_text().splitlines()[:12]]
    data = tmp_path / "terminal_test.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "run", "--data", str(data), "--model", "retrieval",
                                 "--out", str(out), "--no-judge", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "Rule tier" in result.output and "No judge configured" in result.output
    preds = list(read_journal(out / "predictions.jsonl"))
    assert sorted(p["id"] for p in preds) == sorted(r["id"] for r in rows)
    assert all(p["source"] == "retrieval" and not p["error"] for p in preds)
    scores = json.loads((out / "scores.json").read_text())
    rule_overall = scores["rules"]["terminal"]["overall"]
    assert 0 < rule_overall <= 100
    # The samples are in the index, so retrieval finds most of them verbatim.
    assert rule_overall > 60
    rep = runner.invoke(app, ["eval", "report", "--run", str(out)])
    assert rep.exit_code == 0, rep.output
    html = (out / "report.html").read_text()
    assert "<svg" in html or "<table" in html
    assert rows[0]["id"] in html


def test_bad_data_is_one_clear_error(tmp_path: Path) -> None:
    data = tmp_path / "terminal_test.jsonl"
    data.write_text('{"task": "terminal", "id": "x", "prompt": ["a"], "response": ["b"], '
                    '"system_str": "", "turn_idx": 3}\n')
    result = runner.invoke(app, ["eval", "run", "--data", str(data), "--model", "retrieval",
                                 "--out", str(tmp_path / "run"), "--no-judge", "--no-progress"])
    assert result.exit_code == 2
    assert f"{data}:1" in result.output and "'turn_idx'" in result.output


def test_data_process_in_two_processes_matches_one(tmp_path: Path) -> None:
    """`agentworld data process -j 2` is the same pipeline, sharded: byte-identical output."""
    outputs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"out{jobs}" / "bench.jsonl"
        config = tmp_path / f"pipeline{jobs}.json"
        config.write_text(json.dumps({
            "inputs": [{"path": str(corpus_path("terminal"))}],
            "steps": ["expand", "dedup", "mask"],
            "output": {"format": "agentworld-bench", "path": str(out)}}))
        result = runner.invoke(app, ["data", "process", "--config", str(config), "-j", jobs, "--no-progress"])
        assert result.exit_code == 0, result.output
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1] == corpus_path("terminal").read_bytes()


def _walk(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command of the tree (lazy groups loaded), with its path from the root."""
    yield path, command
    if not path:
        for name, entry in COMMANDS.items():
            if not entry.hidden:
                yield from _walk(load_command(name), (name,))
    elif hasattr(command, "list_commands"):  # a group, maybe lazy (record: one command per domain plugin)
        ctx = Context(command)
        for name in command.list_commands(ctx):
            yield from _walk(command.get_command(ctx, name), (*path, name))


TIME_WORDS = ("timeout", "latency", "wall-clock", "interval", "delay", "grace", "idle")
PATH_OPTIONS = {"--out", "--data", "--config", "--tools", "--in", "--run", "--control", "--spec",
                "--scenarios", "--report", "--tokenizer", "--prompts", "--cache", "--reference-run",
                "--model-corpus", "--judged", "--output-dir"}
ENDPOINT_OPTIONS = {f"--{who}-{what}" for who in ("model", "judge", "agent", "generator", "optimizer")
                    for what in ("base-url", "api-key")}


def test_every_command_follows_the_house_style() -> None:
    """Help on every option, plain text, units in names, paths typed, one endpoint naming scheme."""
    root = typer.main.get_command(app)
    seen = 0
    for path, command in _walk(root):
        seen += 1
        where = " ".join(("agentworld", *path))
        assert "``" not in (command.help or ""), where
        for param in command.params:
            if param.param_type_name != "option" or param.name == "help":
                continue
            flags = [o for o in param.opts if o.startswith("--")]
            assert param.help and "``" not in param.help, (where, flags)
            for flag in flags:
                if any(word in flag for word in TIME_WORDS):
                    assert flag.endswith(("-s", "-ms")), (where, flag)
                if "base-url" in flag or "api-key" in flag:
                    assert flag in ENDPOINT_OPTIONS, (where, flag)
                if flag in PATH_OPTIONS:
                    annotation = param.type_descriptor.annotation
                    assert Path in (annotation, *typing.get_args(annotation)), (where, flag, annotation)
        text = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "100"}).output
        assert "╭" not in text, where  # plain-text help, so '[extra]' is never eaten as markup
    assert seen >= 25


OLD_WORDS = {"--in", "--input", "--output", "--output-dir", "--seeds", "--append", "--fresh", "--no-resume",
             "--report", "--html", "--write-data"}
"""Spellings of earlier releases: none may be visible (they parse as hidden aliases, tested below)."""
WRITES = re.compile(r"^--(.+-)?(out|output|output-dir|report|html|write-.+)$")


def _options(command: Any) -> tuple[list[Any], list[Any]]:
    """The visible options of ``command`` and its hidden old spellings (``--help`` left out)."""
    options = [p for p in command.params if p.param_type_name == "option" and p.name != "help"]
    return ([p for p in options if not p.hidden],
            [p for p in options if p.hidden and p.name.startswith(OLD)])


def _commands() -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command of the tree that has options of its own (groups with a body included)."""
    for path, command in _walk(typer.main.get_command(app)):
        if path and _options(command)[0]:
            yield path, command


def test_one_vocabulary_over_the_whole_command_tree() -> None:
    """--data reads rows, --run a run folder, --out is what a command writes, --seed an integer seed,
    --seed-files seed files, --resume continues; required options first; old spellings hidden."""
    checked = 0
    for path, command in _commands():
        where = " ".join(("agentworld", *path))
        visible, old = _options(command)
        flags = {flag: p for p in visible for flag in [*p.opts, *p.secondary_opts]}
        assert not OLD_WORDS & set(flags), (where, OLD_WORDS & set(flags))
        assert not {o for p in old for o in p.opts} & set(flags), where  # an old spelling never shows
        config = config_of(command.callback)
        assert config is not None, f"{where}: not generated from a typed config (cli_support.config_command)"
        outputs = [p for p in visible if isinstance(extra := config.model_fields.get(p.name) and
                                                    config.model_fields[p.name].json_schema_extra, dict)
                   and "output" in extra]
        for param in outputs:
            assert param.opts[0] == "--out" or param.opts[0].endswith("-out"), (where, param.opts)
        assert not outputs or "--out" in flags, f"{where}: its output is not --out"
        for flag, param in flags.items():
            assert not WRITES.match(flag) or param in outputs, f"{where}: {flag} writes but is not an output"
            if "resume" in flag or "continue" in flag:
                assert param.opts == ["--resume"] and not param.secondary_opts, (where, flag)
            if flag == "--seed":
                assert param.type_descriptor.annotation is int, (where, flag)
            if flag in ("--data", "--run", "--seed-files"):
                annotation = param.type_descriptor.annotation
                assert Path in (annotation, *typing.get_args(annotation)), (where, flag, annotation)
        required = [p.required for p in visible]
        assert required == sorted(required, reverse=True), f"{where}: a required option after an optional one"
        text = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"}).output
        options = text.split("Options:")[1]
        listed = [f for f in re.findall(r"^  (?:-\w, )?(--[a-z0-9-]+)", options, re.M) if f != "--help"]
        assert listed == [next(o for o in p.opts if o.startswith("--")) for p in visible], where
        checked += 1
    assert checked >= 35


def _sample(param: Any, value: str = "x") -> list[str]:
    """A command-line value ``param`` accepts: its first choice, a number, or ``value``."""
    if getattr(param, "is_flag", False):
        return []
    annotation = param.type_descriptor.annotation
    kinds = {a for a in (annotation, *typing.get_args(annotation)) if isinstance(a, type)}
    if choice := next((k for k in kinds if issubclass(k, Enum)), None):
        return [str(next(iter(choice)).value)]
    return ["1"] if kinds & {int, float} else [value]


def test_old_spellings_still_parse_and_the_new_one_wins() -> None:
    """Every hidden old spelling fills its option (a required option given only by it is given); given
    both, the new spelling wins. The old spellings of this release are all there."""
    found = set()
    for path, command in _commands():
        _, old = _options(command)
        for param in old:
            name = param.name[len(OLD):].split("_", 1)[1]
            new = next(p for p in command.params if p.name == name)
            spelling = param.opts[0]
            found.add((" ".join(path), spelling, new.opts[0]))
            fill = [a for p in command.params if p.required and p is not new
                    for a in ([p.opts[0]] if p.param_type_name == "option" else []) + _sample(p)]
            parsed = command.make_context(path[-1], [*fill, spelling, *_sample(param, "old-value")]).params
            value = parsed[name]
            value = value[0] if isinstance(value, (list, tuple)) else value
            expected = (not spelling.startswith("--no-")) if param.is_flag else "old-value"
            assert (value if param.is_flag else str(value)) == expected, (path, spelling, parsed[name])
            if not param.is_flag:
                both = [*fill, spelling, "old-value", new.opts[0], "new-value"]
                value = command.make_context(path[-1], both).params[name]
                assert "new-value" in str(value) and "old-value" not in str(value), (path, spelling, value)
    for expected in [("data convert", "--in", "--data"), ("data export", "--in", "--data"),
                     ("data stats", "--report", "--out"), ("synth envs", "--seeds", "--seed-files"),
                     ("train sft", "--output-dir", "--out"), ("train cpt", "--no-resume", "--resume"),
                     ("train rl", "--output-dir", "--out"), ("record terminal", "--append", "--resume"),
                     ("eval compare", "--html", "--out"), ("eval probes", "--write-data", "--data-out")]:
        assert expected in found, expected


def test_train_flags_override_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As TRL's TrlParser: --config gives the values, the flags given win; without --config the flags
    alone make the config; paths of the file are relative to it, those of a flag to the working folder."""
    from agentworld.train import cli as train_cli

    seen: list[Any] = []
    monkeypatch.setattr(train_cli, "_dry_run", lambda enabled, config: seen.append(config) or True)
    corpus = corpus_path("terminal")
    (tmp_path / "conf").mkdir()
    config = tmp_path / "conf" / "sft.yaml"
    config.write_text(f"model: hub/model\noutput_dir: ./run\ndata:\n  - {{path: {corpus}}}\nmax_steps: 7\n"
                      "learning_rate: 0.001\nresume: true\nlora: {r: 4}\n")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["train", "sft", "--config", str(config), "--max-steps", "3", "--no-resume",
                                 "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "--no-resume is the old spelling of --resume" in result.output
    sft = seen.pop()
    assert (sft.max_steps, sft.learning_rate, sft.resume, sft.lora.r) == (3, 0.001, False, 4)
    assert sft.output_dir == tmp_path / "conf" / "run" and sft.model == "hub/model"
    result = runner.invoke(app, ["train", "sft", "-c", str(config), "--out", "mine", "--model", "./m",
                                 "--data", str(corpus), "--data", str(corpus), "--dry-run"])
    assert result.exit_code == 0, result.output
    sft = seen.pop()
    assert sft.output_dir == Path("mine") and sft.model == "./m" and len(sft.data) == 2
    assert sft.max_steps == 7 and sft.resume  # not given: the file's
    result = runner.invoke(app, ["train", "rl", "--model", "hub/m", "--out", "rl", "--data", str(corpus),
                                 "--reward", "rule", "--dry-run"])
    assert result.exit_code == 0, result.output
    rl = seen.pop()
    assert (rl.model, rl.output_dir, rl.data, rl.reward, rl.max_steps) == ("hub/m", Path("rl"), corpus,
                                                                           "rule", 100)
    result = runner.invoke(app, ["train", "cpt", "--out", "x", "--dry-run"])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and "--model: Field required" in lines[0], result.output
    assert not seen


@pytest.mark.parametrize("args", [
    ["shell", "--model", "nope"],
    ["train", "rl", "--config", "missing.yaml"],
    ["train", "cpt", "--config", "missing.yaml"],
    ["train", "rollout", "--tools", "missing.json", "--agent-base-url", "http://127.0.0.1:9/v1",
     "--agent-model", "a", "--model", "m", "--model-base-url", "http://127.0.0.1:9/v1", "--out", "o.jsonl"],
    ["data", "convert", "--data", "missing.jsonl", "--out", "u.jsonl"],
    ["eval", "run", "--data", "missing.jsonl", "--out", "run", "--model", "retrieval"],
    ["eval", "run", "--data", "x", "--out", "run", "--model", "retrieval", "--concurrency", "0"],
    ["nope"],
    ["eval", "run", "--bogus"],
])
def test_user_errors_are_one_red_line_and_exit_2(args: list[str], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, args, input="ls\n")
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output


def test_record_mcp_default_grace_matches_the_proxy() -> None:
    """The CLI states the proxy's default without importing it (that import is heavy): keep them equal."""
    from agentworld.domains.mcp import record
    from agentworld.envs.mcp_proxy_stdio import DEFAULT_GRACE_S

    assert record.DEFAULT_GRACE_S == DEFAULT_GRACE_S

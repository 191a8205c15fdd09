"""Every command that writes refuses what is not ours, before any work; one writer per run folder.

The command tree is walked, so a new command with an output option is tested without being listed.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.outputs import LOCK_NAME, claim_file, claim_folder, release_all
from test_cli import _walk

runner = CliRunner()
OUTPUT = re.compile(r"^--((.+-)?out|output(-dir)?|report|write-data)$")
"""Options that name something a command writes (``--timeout-s`` and ``--keep-heldout`` are not)."""


def _outputs() -> list[tuple[tuple[str, ...], Any, Any]]:
    found = []
    for path, command in _walk(typer.main.get_command(app)):
        if hasattr(command, "list_commands"):
            continue
        for param in command.params:
            if getattr(param, "hidden", False):
                continue  # an old spelling (tested in test_cli.py)
            if any(OUTPUT.match(opt) for opt in getattr(param, "opts", ())) and param.name != "help":
                found.append((path, command, param))
    return found


def _snapshot(target: Path) -> dict[str, bytes]:
    if target.is_file():
        return {"": target.read_bytes()}
    return {str(p.relative_to(target)): (p.read_bytes() if p.is_file() else b"")
            for p in sorted(target.rglob("*"))}


def _arguments(command: Any, param: Any, target: Path, dummy: Path) -> list[str]:
    """The command line: ``target`` as the output, every other required option filled with a value
    that passes validation (a file that exists, its first choice, a word)."""
    args = [param.opts[0], str(target)]
    for other in command.params:
        if other is param or not other.required:
            continue
        annotation = other.type_descriptor.annotation
        if isinstance(annotation, type) and issubclass(annotation, Enum):
            value = next(iter(annotation)).value
        else:
            value = str(dummy) if "Path" in repr(annotation) else "x"
        args += [other.opts[0], value] if other.param_type_name == "option" else [value]
    return args


FOREIGN_FILE = b"my notes, not agentworld's\n"
NEEDS = {("eval", "agent-predictions"): ["--model", "retrieval"],
         ("eval", "closed-loop"): ["--scripted-agent"],
         ("train", "rollout"): ["--tools", "{dummy}"], ("train", "verl-config"): ["--tools", "{dummy}"],
         ("synth", "world"): ["--domain", "search"]}
"""The options a command validates together (one of two, a choice), so the guard is what answers."""


def test_the_walk_finds_every_writer() -> None:
    names = {(" ".join(path), param.opts[0]) for path, _, param in _outputs()}
    for expected in [("eval run", "--out"), ("synth envs", "--out"), ("synth check", "--out"),
                     ("train rollout", "--out"), ("data convert", "--out"), ("optimize prompts", "--out"),
                     ("record terminal", "--out"), ("train verl-config", "--out"),
                     ("data stats", "--out")]:
        assert expected in names, expected
    assert len(names) >= 25


@pytest.mark.parametrize("target_kind", ["folder", "file"])
def test_every_writer_refuses_a_foreign_target_before_any_work(tmp_path: Path, target_kind: str) -> None:
    """Each output option of each command, given a foreign non-empty folder and a foreign file: exit 2,
    one line naming the target, the target byte-identical, nothing else created."""
    dummy = tmp_path / "input.jsonl"
    dummy.write_text('{"id": "x"}\n')
    failures = []
    for path, command, param in _outputs():
        target = tmp_path / f"{'_'.join(path)}{param.opts[0]}"
        if target_kind == "folder":
            (target / "sub").mkdir(parents=True)
            (target / "config.json").write_text('{"theirs": true}\n')
            (target / "summary.json").write_text('{"theirs": true}\n')
            (target / "sub" / "notes.txt").write_bytes(FOREIGN_FILE)
        else:
            target.write_bytes(FOREIGN_FILE)
        before = _snapshot(target)
        listing = sorted(os.listdir(tmp_path))
        needs = [arg.format(dummy=dummy) for arg in NEEDS.get(path, [])]
        result = runner.invoke(app, [*path, *_arguments(command, param, target, dummy), *needs])
        lines = result.output.strip().splitlines()
        ok = (result.exit_code == 2 and len(lines) == 1 and str(target) in lines[0]
              and _snapshot(target) == before and sorted(os.listdir(tmp_path)) == listing)
        if not ok:
            failures.append(f"{' '.join(path)} {param.opts[0]}: exit {result.exit_code}: "
                            f"{result.output[-300:]!r}")
    assert not failures, "\n".join(failures)


def test_a_folder_of_ours_is_resumed_and_a_file_of_ours_replaced(tmp_path: Path) -> None:
    out = tmp_path / "run"
    claim_folder(out, kind="K", command="eval run")
    release_all()
    assert not out.exists()  # made by the guard, nothing written: removed again
    claim_folder(out, kind="K", command="eval run")
    (out / "result.json").write_text("{}")
    release_all()
    claim_folder(out, kind="K", command="eval run")  # the lock file marks it as ours
    release_all()
    with pytest.raises(Exception, match="not an agentworld synth envs folder"):
        claim_folder(out, kind="Other", command="synth envs")
    mine = tmp_path / "rows.jsonl"
    mine.write_text('{"id": "a"}\n')
    claim_file(mine)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(Exception, match="not a regular file"):
        claim_file(fifo)


HOLDER = """
import sys, time
from pathlib import Path
from agentworld.outputs import claim_folder
claim_folder(Path(sys.argv[1]), kind="EvalConfig", command="eval run")
print("held", flush=True)
time.sleep(120)
"""


def test_a_second_writer_on_the_same_folder_exits_2_naming_the_holder(tmp_path: Path) -> None:
    """Two real processes: the second ``eval run`` on the folder the first holds is refused with its
    pid; after the holder is SIGKILLed the kernel has released the lock and the same command runs."""
    from eval_helpers import bench_rows, write_bench

    data = write_bench(tmp_path / "data", bench_rows(2))
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1] / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, env=env,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        command = [sys.executable, "-m", "agentworld", "eval", "run", "--data", str(data), "--model",
                   "retrieval", "--no-judge", "--no-progress", "--out", str(out)]
        second = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
        assert second.returncode == 2, second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and str(out) in lines[0] and f"pid {holder.pid}" in lines[0], second.stderr
        assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]  # nothing written, nothing sent
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        third = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
        assert third.returncode == 0, third.stderr
        assert (out / "predictions.jsonl").is_file()
    finally:
        if holder.poll() is None:
            holder.kill()
        time.sleep(0)


@pytest.mark.parametrize("recipe", ["cpt", "sft", "rl"])
def test_a_config_files_output_dir_gets_the_same_guard(tmp_path: Path, recipe: str) -> None:
    """``train cpt|sft|rl --config X`` writes where X's ``output_dir`` says: a foreign folder there is
    refused before any model is loaded (the model path does not even exist), byte-identical after."""
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine\n")
    corpus = Path(__file__).resolve().parents[1] / "src/agentworld/domains/terminal/corpus.jsonl"
    config = tmp_path / f"{recipe}.yaml"
    data = f"data: {corpus}" if recipe == "rl" else f"data:\n  - {{path: {corpus}}}"  # rl: one file
    config.write_text(f"model: ./no-model\noutput_dir: ./foreign\n{data}\nmax_steps: 1\n")
    result = CliRunner().invoke(app, ["train", recipe, "--config", str(config)])
    assert result.exit_code == 2, result.output
    assert "output_dir (in" in result.output and "not an agentworld" in result.output
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]
    assert (foreign / "notes.txt").read_text() == "mine\n"

"""Every command that writes refuses what is not ours, before any work; one writer per run folder.

The command tree is walked, so a new command with an output option is tested without being listed.
"""

from __future__ import annotations

import json
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
from agentworld.cli_support import claim_outputs
from agentworld.errors import AgentWorldError
from agentworld.io import JsonlJournal
from agentworld.marks import mark_path
from agentworld.outputs import LOCK_NAME, ForeignOutputError, claim_file, claim_folder, release_all
from fuzz_harness import assert_clean, run_cli
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
    that passes validation (a file that exists, a fresh name for another output, its first choice, a
    word)."""
    args = [param.opts[0], str(target)]
    for other in command.params:
        if other is param or not other.required:
            continue
        annotation = other.type_descriptor.annotation
        if isinstance(annotation, type) and issubclass(annotation, Enum):
            value = next(iter(annotation)).value
        elif any(OUTPUT.match(opt) for opt in other.opts):
            value = str(dummy.with_name(f"new-{other.name}"))  # another output: a fresh name, unclaimed
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
    claim_file(mine, command="data convert")
    mine.write_text('{"id": "a"}\n')
    release_all()
    claim_file(mine)  # its mark matches its bytes
    release_all()
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


# -- Issue 31: guards that cannot be fooled (each test failed on the code before the fix) --------------

USER_ROWS = b'{"id": "mine-1", "text": "my own rows"}\n{"id": "mine-2", "text": "not agentworld\'s"}\n'


def _command_line(words: tuple[str, ...], option: str, target: Path, dummy: Path) -> list[str]:
    """``words`` with ``target`` as its output ``option`` and every other required option filled in."""
    for path, command, param in _outputs():
        if path == words and param.opts[0] == option:
            needs = [arg.format(dummy=dummy) for arg in NEEDS.get(path, [])]
            return [*path, *_arguments(command, param, target, dummy), *needs]
    raise AssertionError(f"no output option {option} of {words}")


def _eval_run(data: Path, out: Path) -> list[str]:
    return ["eval", "run", "--data", str(data), "--model", "retrieval", "--no-judge", "--no-progress",
            "--out", str(out)]


@pytest.mark.parametrize("points_to", ["file", "dangling", "folder"])
def test_a_lock_that_is_a_link_is_refused_and_what_it_points_to_is_untouched(tmp_path: Path,
                                                                             points_to: str) -> None:
    """``.agentworld.lock`` pre-placed as a symlink in an otherwise empty ``--out`` folder: the run
    used to truncate and overwrite the file it points to. Now: exit 2, one line, the target as it was."""
    from eval_helpers import bench_rows, write_bench

    user = tmp_path / "user"
    user.mkdir()
    victim = user / "thesis.txt"
    victim.write_bytes(b"three years of work\n")
    out = tmp_path / "run"
    out.mkdir()
    target = {"file": victim, "dangling": user / "gone", "folder": user}[points_to]
    (out / LOCK_NAME).symlink_to(target)
    with pytest.raises(ForeignOutputError, match="symbolic link"):
        claim_folder(out, kind="EvalConfig", command="eval run")
    release_all()
    data = write_bench(tmp_path / "data", bench_rows(1))
    result = runner.invoke(app, _eval_run(data, out))
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and str(out) in lines[0], result.output
    assert victim.read_bytes() == b"three years of work\n" and sorted(os.listdir(user)) == ["thesis.txt"]
    assert (out / LOCK_NAME).is_symlink() and os.listdir(out) == [LOCK_NAME]


@pytest.mark.parametrize("placed", ["fifo-lock", "fifo-lock-and-a-file", "fifo-config"])
def test_a_fifo_in_an_output_folder_is_refused_without_hanging(tmp_path: Path, placed: str) -> None:
    """A FIFO as the lock (alone: a traceback; with another file: the lock's reader hung) or as
    ``config.json`` of a probes folder (its format check hung): one line, exit 2, within the bound."""
    dummy = tmp_path / "input.jsonl"
    dummy.write_text('{"id": "x"}\n')
    out = tmp_path / "run"
    out.mkdir()
    os.mkfifo(out / (LOCK_NAME if "lock" in placed else "config.json"))
    if placed == "fifo-lock-and-a-file":
        (out / "notes.txt").write_text("mine\n")
    words = ("eval", "probes") if placed == "fifo-config" else ("eval", "run")
    argv = (_command_line(words, "--out", out, dummy) if placed == "fifo-config"
            else _eval_run(dummy, out))
    outcome = run_cli(argv, cwd=tmp_path, timeout_s=20)
    assert_clean(outcome, allow=(2,))
    assert str(out) in outcome.stderr and "FIFO" in outcome.stderr, outcome.describe()


def test_a_link_inside_a_folder_of_ours_is_refused(tmp_path: Path) -> None:
    """A folder whose lock names the command (a forged or an old one) but which holds a link: a writer
    opening a fixed name there would follow it, so the folder is not ours; and the journal writer
    itself never appends through a link."""
    victim = tmp_path / "victim.jsonl"
    victim.write_bytes(USER_ROWS)
    out = tmp_path / "run"
    out.mkdir()
    (out / LOCK_NAME).write_text('{"pid": 1, "kind": "EvalConfig"}\n')
    (out / "predictions.jsonl").symlink_to(victim)
    with pytest.raises(ForeignOutputError, match=r"predictions\.jsonl, a symbolic link"):
        claim_folder(out, kind="EvalConfig", command="eval run")
    release_all()
    with pytest.raises(AgentWorldError, match="symbolic link"):
        JsonlJournal(out / "predictions.jsonl").append({"id": "theirs"})
    assert victim.read_bytes() == USER_ROWS


@pytest.mark.parametrize(("words", "name", "content"), [
    (("data", "convert"), "user.jsonl", USER_ROWS),
    (("data", "convert"), "user.json", b'{"my": "settings", "of": ["a", "b"]}\n'),
    (("data", "stats"), "user.html", b"<!doctype html><p>my notes about agentworld</p>\n"),
])
def test_a_users_json_lines_or_html_file_is_not_taken_as_ours(tmp_path: Path, words: tuple[str, ...],
                                                              name: str, content: bytes) -> None:
    """The guard sniffed "valid JSON" (or HTML naming agentworld): a user's own rows were silently
    replaced. Now a file is ours only with a mark whose digest matches; these have none."""
    data = tmp_path / "input.jsonl"
    data.write_text(json_row(), encoding="utf-8")
    target = tmp_path / name
    target.write_bytes(content)
    result = runner.invoke(app, _command_line(words, "--out", target, data))
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert "carries no agentworld mark" in lines[0]
    assert target.read_bytes() == content and sorted(os.listdir(tmp_path)) == ["input.jsonl", name]


def json_row() -> str:
    """One unified trajectory row (what ``data convert`` and ``data stats`` read)."""
    from eval_helpers import bench_rows

    return "".join(json.dumps(r) + "\n" for r in bench_rows(1))


def test_an_output_of_ours_is_replaced_and_one_edited_since_is_not(tmp_path: Path) -> None:
    """The mark: ``data convert`` twice on the same --out replaces its own output; once the user has
    edited the file it is theirs (it used to be replaced as long as it was JSON lines)."""
    data = tmp_path / "input.jsonl"
    data.write_text(json_row(), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    argv = ["data", "convert", "--data", str(data), "--out", str(out)]
    assert runner.invoke(app, argv).exit_code == 0
    assert mark_path(out).is_file() and b'"done"' in mark_path(out).read_bytes()
    assert runner.invoke(app, argv).exit_code == 0  # ours: its bytes match the mark
    edited = out.read_bytes() + b'{"id": "added by hand"}\n'
    out.write_bytes(edited)
    result = runner.invoke(app, argv)
    assert result.exit_code == 2 and "was changed since agentworld wrote it" in result.output
    assert out.read_bytes() == edited


def test_a_file_output_that_is_a_link_is_refused(tmp_path: Path) -> None:
    """``--out link`` (to a user's JSON-lines file) used to pass as ours and be replaced."""
    data = tmp_path / "input.jsonl"
    data.write_text(json_row(), encoding="utf-8")
    victim = tmp_path / "victim.jsonl"
    victim.write_bytes(USER_ROWS)
    link = tmp_path / "out.jsonl"
    link.symlink_to(victim)
    result = runner.invoke(app, ["data", "convert", "--data", str(data), "--out", str(link)])
    assert result.exit_code == 2 and "symbolic link" in result.output, result.output
    assert link.is_symlink() and victim.read_bytes() == USER_ROWS


def test_a_sibling_of_a_file_output_gets_the_same_guard(tmp_path: Path) -> None:
    """Every file written beside an output is claimed with it: ``train rollout``'s ``.endpoints.json``
    and ``data export``'s default eval side (``eval.jsonl`` beside ``train.jsonl``) were not."""
    dummy = tmp_path / "input.jsonl"
    dummy.write_text(json_row(), encoding="utf-8")
    cases = [(("train", "rollout"), tmp_path / "episodes.jsonl", tmp_path / "episodes.endpoints.json"),
             (("data", "export"), tmp_path / "train.jsonl", tmp_path / "eval.jsonl")]
    for words, out, sibling in cases:
        sibling.write_bytes(USER_ROWS)
        result = runner.invoke(app, _command_line(words, "--out", out, dummy))
        lines = result.output.strip().splitlines()
        assert result.exit_code == 2 and len(lines) == 1 and str(sibling) in lines[0], (words, result.output)
        assert sibling.read_bytes() == USER_ROWS and not out.exists()


def test_a_pipeline_configs_outputs_get_the_guard(tmp_path: Path) -> None:
    """``data process``: the train side, the eval side and ``stats.json`` named by the pipeline config
    were written with no guard at all; a user's file at any of them is refused before any sample is read."""
    data = tmp_path / "input.jsonl"
    data.write_text(json_row(), encoding="utf-8")
    for name in ("train.jsonl", "eval.jsonl", "stats.json"):
        folder = tmp_path / name.replace(".", "-")
        folder.mkdir()
        (folder / name).write_bytes(USER_ROWS)
        config = folder / "pipeline.yaml"
        config.write_text(f"inputs:\n  - path: {data}\noutput: {{format: samples, path: train.jsonl}}\n")
        result = runner.invoke(app, ["data", "process", "--config", str(config), "--no-progress"])
        assert result.exit_code == 2 and str(folder / name) in result.output, (name, result.output)
        assert (folder / name).read_bytes() == USER_ROWS
        assert sorted(os.listdir(folder)) == sorted([name, "pipeline.yaml"])


def test_a_saved_dataset_folder_is_not_taken_for_an_export_of_ours(tmp_path: Path) -> None:
    """``data export --format hf-datasets``: any folder holding ``dataset_dict.json`` (a dataset the
    user saved) used to pass as ours and be replaced; a marked export of ours still is."""
    from agentworld.data.cli import ExportOptions

    folder = tmp_path / "my-dataset"
    folder.mkdir()
    (folder / "dataset_dict.json").write_text('{"splits": ["train"]}')
    options = ExportOptions(inp=[tmp_path / "x.jsonl"], format="hf-datasets", out=folder)
    with pytest.raises(ForeignOutputError, match="carries no agentworld mark"):
        claim_outputs(options)
    release_all()
    assert sorted(os.listdir(tmp_path)) == ["my-dataset"]
    ours = tmp_path / "ours"
    claim_outputs(options.model_copy(update={"out": ours}))
    ours.mkdir()
    (ours / "dataset_dict.json").write_text('{"splits": ["train"]}')
    release_all()
    claim_outputs(options.model_copy(update={"out": ours}))  # the mark's tree digest matches
    release_all()
    deep, levels = tmp_path / "deep", [tmp_path / "deep"]
    for _ in range(1200):  # deeper than Python's recursion limit
        levels[-1].mkdir()
        levels.append(levels[-1] / "d")
    mark_path(deep).write_bytes(json.dumps({"mark": "agentworld-output/1", "state": "done", "pid": 1,
                                            "size": 0, "sha256": "0" * 64}).encode())
    try:
        with pytest.raises(ForeignOutputError, match="was changed since agentworld wrote it"):
            claim_outputs(options.model_copy(update={"out": deep}))
        release_all()
    finally:
        for level in reversed(levels[:-1]):  # shutil.rmtree (pytest's clean-up) recurses: too deep for it
            level.rmdir()


def _train_config(tmp_path: Path, out: str, *extra: str) -> Path:
    corpus = Path(__file__).resolve().parents[1] / "src/agentworld/domains/terminal/corpus.jsonl"
    config = tmp_path / "sft.yaml"
    config.write_text("\n".join([f"model: {tmp_path / 'no-model'}", f"output_dir: {out}",
                                 f"data:\n  - {{path: {corpus}}}", "max_steps: 1", *extra]) + "\n")
    return config


def test_a_training_folder_is_not_taken_for_ours_by_its_config_keys(tmp_path: Path) -> None:
    """A user's own training folder whose ``config.json`` has ``model``, ``learning_rate`` and ``lora``
    passed as an agentworld run (and got our lock, then checkpoints, written into it)."""
    folder = tmp_path / "my-run"
    (folder / "checkpoint-100").mkdir(parents=True)
    (folder / "config.json").write_text('{"model": "llama", "learning_rate": 0.1, "lora": {}}\n')
    before = _snapshot(folder)
    result = runner.invoke(app, ["train", "sft", "--config", str(_train_config(tmp_path, str(folder)))])
    assert result.exit_code == 2 and "not an agentworld" in result.output, result.output
    assert _snapshot(folder) == before and LOCK_NAME not in os.listdir(folder)


def test_an_earlier_training_run_is_not_restarted_without_resume(tmp_path: Path) -> None:
    """A folder of ours with checkpoints: a new ``train sft`` without ``--resume`` would train from
    scratch over them; refused naming ``--resume`` (given on the command line or in the file)."""
    folder = tmp_path / "run"
    (folder / "checkpoint-1").mkdir(parents=True)
    (folder / LOCK_NAME).write_text('{"pid": 1, "kind": "SFTConfig", "command": "agentworld train sft"}\n')
    config = _train_config(tmp_path, str(folder))
    refused = runner.invoke(app, ["train", "sft", "--config", str(config)])
    assert refused.exit_code == 2 and "pass --resume to continue it" in refused.output, refused.output
    for argv in (["--resume"], ["--out", str(folder)]):
        extra = ["resume: true"] if argv[0] == "--out" else []
        given = _train_config(tmp_path, str(folder), *extra)
        result = runner.invoke(app, ["train", "sft", "--config", str(given), *argv])
        assert "pass --resume" not in result.output, (argv, result.output)  # past the guard


HOLD_FILE = """
import sys, time
from pathlib import Path
from agentworld.outputs import claim_file
claim_file(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(120)
"""


def test_a_second_writer_of_the_same_file_exits_2_naming_the_holder(tmp_path: Path) -> None:
    """A file output is held (its ``writing`` mark locked) while its writer runs: a second command on
    it is refused with the holder's pid; once the holder is SIGKILLed its partial output is ours."""
    data = tmp_path / "input.jsonl"
    data.write_text(json_row(), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1] / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    holder = subprocess.Popen([sys.executable, "-c", HOLD_FILE, str(out)], stdout=subprocess.PIPE, env=env,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        out.write_bytes(b'{"id": "half a row"}\n')
        argv = ["data", "convert", "--data", str(data), "--out", str(out)]
        busy = runner.invoke(app, argv)
        assert busy.exit_code == 2 and f"pid {holder.pid}" in busy.output, busy.output
        assert out.read_bytes() == b'{"id": "half a row"}\n'
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        resumed = runner.invoke(app, argv)
        assert resumed.exit_code == 0, resumed.output
    finally:
        if holder.poll() is None:
            holder.kill()


def test_a_claimed_output_never_written_leaves_no_trace(tmp_path: Path) -> None:
    """The mark of a file the command never wrote is taken away again, and a foreign file given with
    ``--overwrite`` that the command did not get to write is not marked as ours (its old mark, forged
    or not, is put back byte for byte)."""
    new = tmp_path / "sub" / "new.jsonl"
    claim_file(new)
    assert mark_path(new).exists()
    release_all()
    assert not (tmp_path / "sub").exists()
    theirs = tmp_path / "theirs.jsonl"
    theirs.write_bytes(USER_ROWS)
    mark_path(theirs).write_bytes(b'{"forged": true}\n')
    claim_file(theirs, overwrite=True)
    release_all()
    assert theirs.read_bytes() == USER_ROWS and mark_path(theirs).read_bytes() == b'{"forged": true}\n'
    with pytest.raises(ForeignOutputError, match="not one agentworld wrote"):
        claim_file(theirs)


ROLLOUT_TOOLS = [{"name": "get_weather", "description": "Weather for a city.",
                  "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}]


def _rollout(tools: Path, out: Path, url: str, *extra: str) -> list[str]:
    return ["train", "rollout", "--tools", str(tools), "--out", str(out), "--episodes", "2",
            "--max-turns", "2", "--task", "weather", "--agent-base-url", f"{url}/agent/v1",
            "--agent-model", "agent", "--model-base-url", f"{url}/world/v1", "--model", "world", *extra]


def _rollout_answer(path: str, body: dict[str, Any], headers: Any) -> str:
    if path.startswith("/agent/"):
        return 'I will look.\n{"tool_name": "get_weather", "arguments": {"city": "Oslo"}}'
    return '<predicted_observation>{"city": "Oslo", "temp_c": 3}</predicted_observation>'


def test_rollout_neither_replaces_a_users_rows_nor_an_earlier_rollout_without_resume(tmp_path: Path) -> None:
    """``train rollout --out data.jsonl`` replaced a user's rows whose first line is a JSON object (and
    wrote ``.rl``/``.steps`` files beside them), and a re-run without ``--resume`` replaced an earlier
    rollout. Now both are refused before any episode runs; ``--resume`` of a finished one says so."""
    from serving import chat_server

    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"tools": ROLLOUT_TOOLS}))
    theirs = tmp_path / "data.jsonl"
    theirs.write_bytes(USER_ROWS)
    out = tmp_path / "episodes.jsonl"
    env = {"AGENTWORLD_AGENT_API_KEY": "a", "AGENTWORLD_MODEL_API_KEY": "w", "OPENAI_API_KEY": ""}
    with chat_server(_rollout_answer) as url:
        refused = runner.invoke(app, _rollout(tools, theirs, url), env=env)
        assert refused.exit_code == 2 and "carries no agentworld mark" in refused.output, refused.output
        assert theirs.read_bytes() == USER_ROWS
        assert sorted(os.listdir(tmp_path)) == ["data.jsonl", "tools.json"]
        first = runner.invoke(app, _rollout(tools, out, url), env=env)
        assert first.exit_code == 0, first.output
        written = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
        again = runner.invoke(app, _rollout(tools, out, url), env=env)
        lines = again.output.strip().splitlines()
        assert again.exit_code == 2 and len(lines) == 1, again.output
        assert "pass --resume to continue it" in lines[0]
        resumed = runner.invoke(app, _rollout(tools, out, url, "--resume"), env=env)
        assert resumed.exit_code == 2 and "nothing to resume" in resumed.output, resumed.output
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == written
    assert mark_path(out).is_file() and mark_path(out.with_suffix(".rl.jsonl")).is_file()

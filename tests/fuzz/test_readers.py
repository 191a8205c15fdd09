"""Fuzz every reader of a user's file with hostile inputs (issue 31, item 5: the readers).

Each test builds a valid input, breaks it with the strategies of :mod:`hostile` (wrong types, deep
nesting, alias bombs, huge strings, NUL bytes, invalid UTF-8, U+2028 inside strings, BOMs, cuts,
duplicate ids, ``1e400``/``NaN``, missing and extra fields, FIFOs, links out of the folder), places it
where a command reads it and runs the command (:func:`fuzz_harness.run_cli`). Every case must end
well: exit 0 (a run whose bad samples are recorded), or exit 2 with one ``error:`` line naming the
file; no traceback; within the time and memory bound; nothing outside the run folder changed. A
file that is not a regular one (a FIFO, a device, a folder, a dangling link) and a world file
linked out of its folder are always refused.

Targets (the name each case is tallied under): AgentWorldBench rows (``eval run --data`` and
``--model-corpus``, ``data convert/stats --data``, ``data process``), the official ``judged.jsonl``
(``eval score --judged``), trajectories in every ingest format (``data convert/stats --format``),
tool lists (``serve mcp`` / ``train rollout --tools``), world folders with their ``controls/*.yaml``
(``synth check``, ``serve mcp --world``, ``train rollout --world``), control specs (``serve mcp
--control``), config files (``--config`` of ``train sft/cpt/rl --dry-run`` and ``data process``),
eval run folders (``eval score --run``, ``eval report``), and the reader functions behind them,
in process (more cases for the time).

``AGENTWORLD_FUZZ_SURVEY=FILE`` logs each broken case to FILE (JSON lines) instead of failing, so
every target runs all its cases: how the numbers of the code before the fixes were taken.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import hostile
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fuzz_harness import FOUND, Outcome, assert_clean, count, run_cli, snapshot
from serving import chat_server
from synth_worlds import TASK, WORLD

pytestmark = pytest.mark.fuzz

TIMEOUT_S = 20.0
"""A case that takes longer hangs (a refusal takes well under a second, a small run a few)."""
CLI_EXAMPLES = max(3, settings.default.max_examples // 5)
"""Cases of each CLI target (a fork and a command each): five in CI, 80 in the long profile."""
SURVEY = os.environ.get("AGENTWORLD_FUZZ_SURVEY")

MARK = "**Environment Observation:**\n"
ROWS = [
    {"task": "terminal", "id": "ls-t1", "prompt": ["**Action:**\n```bash\nls\n```"],
     "response": [f"{MARK}root@box:/app# ls\nnotes.txt\nroot@box:/app# "],
     "system_str": "You simulate a terminal.", "turn_idx": 1, "total_turns": 1},
    {"task": "mcp", "id": "get-t1", "response": [f'{MARK}{{"ok": true, "at": "2024-01-01T00:00:00Z"}}'],
     "prompt": ['**Action:**\n```json\n{"tool_name": "get", "arguments": {}}\n```'],
     "system_str": "You simulate an MCP server.", "turn_idx": 1, "total_turns": 1},
]
TRAJECTORY = {"id": "a", "domain": "terminal", "system_prompt": "sim", "task": "terminal", "meta": {},
              "turns": [{"action": "ls", "observation": "notes.txt", "meta": {}}]}
CHAT = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"},
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'}]}
FORMATS = {"unified": TRAJECTORY, "agentworld-bench": ROWS[0], "openai-chat": CHAT, "generic": CHAT,
           "recording": {**ROWS[0], "meta": {"source": "real", "scenario": "ls"}}}
JUDGED = {"task": "terminal", "id": "ls-t1", "total_score": 7.5, "failed": 0.0, "error_message": None,
          "format": 8, "consistency": 7}
CONTROL = {"faults": [{"kind": "server_error", "rate": 0.5, "params": {"status": 503}},
                      {"kind": "truncated", "count": 1, "params": {"keep_fraction": 0.5}}],
           "facts": ["The airline is Aurora Air."], "seed": 3}
TRAIN = {"model": "model", "output_dir": "../out/train", "data": [{"path": "rows.jsonl"}], "max_steps": 1}
RL = {"model": "model", "output_dir": "../out/rl", "data": "rows.jsonl", "max_steps": 1}
PIPELINE = {"inputs": [{"path": "rows.jsonl"}], "steps": ["dedup", "split"],
            "output": {"format": "trl", "path": "../out/train.jsonl"}}


@contextlib.contextmanager
def surveyed(target: str, outcome: Outcome | None = None) -> Iterator[None]:
    """The checks of one case; in survey mode (:data:`SURVEY`) a failure is logged, not raised."""
    try:
        yield
    except AssertionError as exc:
        if not str(exc).startswith(("exit", "killed", "a traceback")):
            FOUND[target] += 1  # assert_clean tallies what it finds; the other checks are tallied here
        if not SURVEY:
            raise
        last = (outcome.stderr.strip().splitlines() or [""])[-1][:300] if outcome else ""
        with open(SURVEY, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"target": target, "problem": str(exc).splitlines()[0], "last_line": last,
                                     "argv": outcome.argv if outcome else None}) + "\n")


class Case:
    """One generated case's folders: ``in/`` (the inputs, the command's working folder), ``out/``
    (where outputs go) and ``outside/`` (beyond the run folder; links may point there)."""

    def __init__(self, root: Path) -> None:
        self.inputs, self.out, self.outside = root / "in", root / "out", root / "outside"
        for folder in (self.inputs, self.out, self.outside):
            folder.mkdir()

    def put(self, name: str, data: bytes, kind: str = "regular") -> Path:
        hostile.place(self.inputs / name, kind, data, self.outside)
        return self.inputs / name

    def run(self, target: str, argv: list[str], *, names: tuple[str, ...], refuse: bool = False,
            watch: Path | None = None, check: Callable[[Outcome], None] | None = None) -> None:
        """Run ``agentworld ARGV`` in ``in/`` and check every property: an exit 2 names one of ``names``;
        ``refuse``: it must exit 2; nothing under ``watch`` (default ``in/``) or ``outside/`` changed."""
        count(target)
        watched = watch or self.inputs
        before = snapshot(watched), snapshot(self.outside)
        outcome = run_cli(argv, cwd=self.inputs, timeout_s=TIMEOUT_S)
        with surveyed(target, outcome):
            assert_clean(outcome, target=target, allow=(2,) if refuse else (0, 2))
            if outcome.code == 2:
                line = outcome.stderr.strip().splitlines()[-1]
                assert any(name in line for name in names), f"the error names none of {names}: {line!r}"
            after = snapshot(watched), snapshot(self.outside)
            assert after == before, "a file beyond the run folder changed"
            if check is not None:
                check(outcome)


def case() -> Iterator[Case]:
    root = Path(tempfile.mkdtemp(prefix="aw-readers-"))
    try:
        yield Case(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


@pytest.fixture(scope="module")
def chat_url() -> Iterator[str]:
    """A loopback OpenAI-compatible endpoint for the agent and the world model of ``train rollout``."""
    with chat_server(lambda path, body, headers: "All done.") as url:
        yield url


def rollout(flag: str, path: str, url: str) -> list[str]:
    return ["train", "rollout", flag, path, "--agent-base-url", f"{url}/agent/v1", "--agent-model", "agent",
            "--model-base-url", f"{url}/world/v1", "--model", "world", "--out", "../out/episodes.jsonl",
            "--episodes", "1", "--max-turns", "1"]


EVAL = ["eval", "run", "--model", "retrieval", "--no-judge", "--no-progress", "--out", "../out/run"]
ROW_COMMANDS = {
    "rows: eval run --data": [*EVAL, "--data", "rows.jsonl"],
    "rows: eval run --model-corpus": [*EVAL, "--model-corpus", "rows.jsonl", "--data", "good.jsonl"],
    "rows: data convert --data": ["data", "convert", "--data", "rows.jsonl", "--out", "../out/u.jsonl"],
    "rows: data stats --data": ["data", "stats", "--data", "rows.jsonl"],
    "rows: data process": ["data", "process", "--config", "pipeline.json", "--no-progress"],
}


@pytest.mark.parametrize("target", sorted(ROW_COMMANDS))
@settings(max_examples=CLI_EXAMPLES)
@given(data=hostile.jsonl_documents(ROWS), kind=st.sampled_from(hostile.FILE_KINDS))
def test_row_files(target: str, data: bytes, kind: str) -> None:
    for c in case():
        c.put("rows.jsonl", data, kind)
        c.put("good.jsonl", jsonl(ROWS))
        c.put("pipeline.json", json.dumps(PIPELINE).encode())
        c.run(target, ROW_COMMANDS[target], names=("rows.jsonl",), refuse=kind not in ("regular", "outside"))


@settings(max_examples=CLI_EXAMPLES)
@given(data=st.one_of(hostile.jsonl_documents([JUDGED, JUDGED]), hostile.json_documents(JUDGED)),
       kind=st.sampled_from(hostile.FILE_KINDS))
def test_judged_files(data: bytes, kind: str) -> None:
    for c in case():
        c.put("judged.jsonl", data, kind)
        c.run("judged: eval score --judged", ["eval", "score", "--judged", "judged.jsonl"],
              names=("judged.jsonl",), refuse=kind not in ("regular", "outside"))


@pytest.mark.parametrize("stats", [False, True], ids=["convert", "stats"])
@settings(max_examples=CLI_EXAMPLES)
@given(fmt=st.sampled_from(sorted(FORMATS)), data=st.data(), kind=st.sampled_from(hostile.FILE_KINDS))
def test_trajectory_files(stats: bool, fmt: str, data: st.DataObject, kind: str) -> None:
    base = FORMATS[fmt]
    text = data.draw(st.one_of(hostile.jsonl_documents([base, base]), hostile.json_documents(base)))
    if stats:
        argv = ["data", "stats", "--data", "log.jsonl", "--format", fmt.replace("agentworld-bench", "auto")]
    else:
        argv = ["data", "convert", "--data", "log.jsonl", "--format", fmt, "--out", "../out/u.jsonl"]
    for c in case():
        c.put("log.jsonl", text, kind)
        c.run(f"trajectories: data {argv[1]} --format", argv, names=("log.jsonl",),
              refuse=kind not in ("regular", "outside"))


@pytest.mark.parametrize("train", [False, True], ids=["serve", "train"])
@settings(max_examples=CLI_EXAMPLES)
@given(data=hostile.json_documents({"tools": WORLD["tools"]}), kind=st.sampled_from(hostile.FILE_KINDS))
def test_tool_files(train: bool, data: bytes, kind: str, chat_url: str) -> None:
    argv = rollout("--tools", "tools.json", chat_url) if train else \
        ["serve", "mcp", "--tools", "tools.json", "--model", "scripted"]
    for c in case():
        c.put("tools.json", data, kind)
        c.run(f"tools: {' '.join(argv[:2])} --tools", argv, names=("tools.json",),
              refuse=kind not in ("regular", "outside"))


@st.composite
def world_files(draw: st.DrawFn) -> tuple[str, bytes, str]:
    """Which file of a world folder is hostile, its bytes and how it is placed."""
    name = draw(st.sampled_from(["world.json", "tasks.jsonl", "controls/flaky.yaml"]))
    if name == "world.json":
        data = draw(hostile.json_documents(WORLD))
    elif name == "tasks.jsonl":
        data = draw(hostile.jsonl_documents([TASK, {**TASK, "id": "t2"}]))
    else:
        data = draw(hostile.yaml_documents(CONTROL))
    return name, data, draw(st.sampled_from(hostile.FILE_KINDS))


@pytest.mark.parametrize("target", ["synth check", "serve mcp --world", "train rollout --world"])
@settings(max_examples=CLI_EXAMPLES)
@given(world=world_files())
def test_world_folders(target: str, world: tuple[str, bytes, str], chat_url: str) -> None:
    name, data, kind = world
    names = (name.rsplit("/", 1)[-1], "world")
    for c in case():
        c.put("world/world.json", json.dumps(WORLD).encode())
        c.put("world/tasks.jsonl", jsonl([TASK]))
        c.put("world/controls/flaky.yaml", json.dumps(CONTROL).encode())
        (c.inputs / "world" / name).unlink()
        c.put(f"world/{name}", data, kind)
        if target == "synth check":  # a rejected world is reported, not an error

            def reported(outcome: Outcome, report: Path = c.out / "check" / "report.json") -> None:
                assert outcome.code != 0 or report.is_file(), "synth check wrote no report"
                if outcome.code == 0 and kind != "regular":
                    kept = json.loads(report.read_bytes())["summary"]["kept"]
                    assert kept == 0, f"a world with a {kind} file was kept"

            c.run(f"world: {target}", ["synth", "check", "world", "--out", "../out/check"], names=names,
                  check=reported)
        else:
            argv = ["serve", "mcp", "--world", "world", "--model", "scripted"] if target.startswith("serve") \
                else [*rollout("--world", "world", chat_url), "--sweep-controls"]
            c.run(f"world: {target}", argv, names=names, refuse=kind != "regular")


@settings(max_examples=CLI_EXAMPLES)
@given(data=hostile.yaml_documents(CONTROL), kind=st.sampled_from(hostile.FILE_KINDS),
       suffix=st.sampled_from([".yaml", ".yml", ".json"]))
def test_control_files(data: bytes, kind: str, suffix: str) -> None:
    for c in case():
        c.put("tools.json", json.dumps({"tools": WORLD["tools"]}).encode())
        c.put(f"control{suffix}", data, kind)
        c.run("controls: serve mcp --control", ["serve", "mcp", "--tools", "tools.json", "--control",
                                                f"control{suffix}", "--model", "scripted"],
              names=(f"control{suffix}",), refuse=kind not in ("regular", "outside"))


CONFIGS = {"config: train sft --config --dry-run": (TRAIN, ["train", "sft", "--dry-run"]),
           "config: train cpt --config --dry-run": (TRAIN, ["train", "cpt", "--dry-run"]),
           "config: train rl --config --dry-run": (RL, ["train", "rl", "--dry-run"]),
           "config: data process --config": (PIPELINE, ["data", "process", "--no-progress"])}


@pytest.mark.parametrize("target", sorted(CONFIGS))
@settings(max_examples=CLI_EXAMPLES)
@given(data=st.data(), kind=st.sampled_from(hostile.FILE_KINDS))
def test_config_files(target: str, data: st.DataObject, kind: str) -> None:
    base, argv = CONFIGS[target]
    text = data.draw(st.one_of(hostile.yaml_documents(base), hostile.json_documents(base)))
    for c in case():
        c.put("rows.jsonl", jsonl(ROWS))
        c.put("model/config.json", b"{}")
        c.put("cfg.yaml", text, kind)
        c.run(target, [*argv, "--config", "cfg.yaml"], names=("cfg.yaml",),
              refuse=kind not in ("regular", "outside"))


@pytest.fixture(scope="module")
def run_folder() -> Iterator[Path]:
    """A finished ``eval run`` folder (retrieval, no judge) whose files the run-folder test breaks."""
    for c in case():
        c.put("rows.jsonl", jsonl(ROWS))
        made = run_cli(ROW_COMMANDS["rows: eval run --data"], cwd=c.inputs, timeout_s=60)
        assert made.code == 0, made.describe()
        yield c.out / "run"


@pytest.mark.parametrize("report", [False, True], ids=["score", "report"])
@settings(max_examples=CLI_EXAMPLES)
@given(name=st.sampled_from(["config.json", "judgments.jsonl", "predictions.jsonl", "rules.jsonl"]),
       data=st.data(), kind=st.sampled_from(hostile.FILE_KINDS))
def test_run_folders(report: bool, name: str, data: st.DataObject, kind: str, run_folder: Path) -> None:
    text = (run_folder / name).read_bytes()
    if name == "config.json":
        broken = data.draw(hostile.json_documents(json.loads(text)))
    else:
        broken = data.draw(hostile.jsonl_documents([json.loads(x) for x in text.split(b"\n") if x.strip()]))
    argv = ["eval", "report", "--run", "run", "--out", "../out/report.html"] if report else \
        ["eval", "score", "--run", "run"]
    for c in case():
        shutil.copytree(run_folder, c.inputs / "run")
        (c.inputs / "run" / name).unlink()
        c.put(f"run/{name}", broken, kind)
        c.run(f"run folder: eval {argv[1]} --run", argv, names=(name, "run"), watch=c.outside)


def _readers() -> dict[str, tuple[Callable[[Path], Any], st.SearchStrategy[bytes]]]:
    """Each reader function behind the commands, and the hostile documents it is fed in process."""
    from agentworld.configfile import load_config_file
    from agentworld.data.ingest import ingest
    from agentworld.data.pipeline import PipelineConfig
    from agentworld.domains import domain_names
    from agentworld.domains.spec import load_control_spec
    from agentworld.eval.records import PredictionRow
    from agentworld.eval.runfolder import read_records
    from agentworld.models.retrieval_corpus import file_rows
    from agentworld.schema import load_samples
    from agentworld.sim.toolfile import load_tools

    rows = hostile.jsonl_documents(ROWS)
    prediction = {"id": "a", "domain": "terminal", "prediction": "x"}
    return {
        "load_samples": (lambda p: load_samples([p], known_domains=domain_names()), rows),
        "ingest (auto)": (lambda p: list(ingest(p)), st.one_of(rows, hostile.json_documents(CHAT))),
        "ingest (unified)": (lambda p: list(ingest(p, "unified")), hostile.jsonl_documents([TRAJECTORY])),
        "retrieval corpus file_rows": (lambda p: list(file_rows(p)), rows),
        "load_tools": (load_tools, hostile.json_documents({"tools": WORLD["tools"]})),
        "load_control_spec": (load_control_spec, hostile.yaml_documents(CONTROL)),
        "load_config_file (pipeline)": (lambda p: load_config_file(PipelineConfig, p),
                                        hostile.yaml_documents(PIPELINE)),
        "read_records (predictions)": (lambda p: read_records(p, PredictionRow),
                                       hostile.jsonl_documents([prediction])),
    }


class _Slow(Exception):
    pass


def _alarm(*_: Any) -> None:
    raise _Slow


@contextlib.contextmanager
def bounded(seconds: int, memory_bytes: int = 2 << 30) -> Iterator[None]:
    """At most ``seconds`` (SIGALRM raises :class:`_Slow`) and ``memory_bytes`` more address space
    (a lowered soft ``RLIMIT_AS``: past it an allocation raises MemoryError) for the block."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    used = int(Path("/proc/self/statm").read_text().split()[0]) * resource.getpagesize()
    limit = used + memory_bytes if hard == resource.RLIM_INFINITY else min(hard, used + memory_bytes)
    previous = signal.signal(signal.SIGALRM, _alarm)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("name", sorted(_readers()))
@given(data=st.data(), kind=st.sampled_from(hostile.FILE_KINDS))
def test_reader_functions(name: str, data: st.DataObject, kind: str) -> None:
    """A value or a DataError naming the file, within a time and a memory bound (:func:`bounded`)."""
    from agentworld.errors import AgentWorldError

    read, documents = _readers()[name]
    text, target = data.draw(documents), f"function: {name}"
    count(target)
    for c in case():
        path = c.put("file.yaml" if "yaml" in name or "config" in name else "file.jsonl", text, kind)
        with surveyed(target):
            try:
                with bounded(10):
                    read(path)
            except AgentWorldError as exc:
                assert path.name in str(exc), f"the error does not name the file: {exc}"
            except _Slow:
                raise AssertionError("still reading after 10 s") from None
            except Exception as exc:  # the property: nothing but a DataError (MemoryError included)
                raise AssertionError(f"raised {type(exc).__name__}: {exc}"[:300]) from None

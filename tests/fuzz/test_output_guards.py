"""Fuzz: every ``--out`` guard against hostile pre-placed outputs (issue 31, items 1 and 5).

The command tree is walked as ``tests/test_outputs.py`` walks it, so a new command with an output
option is fuzzed without being listed. Each case pre-places, at the output (a folder's entries, or a
file output and the files written beside it), what a user or an attacker could leave there: random
bytes, foreign JSON lines, JSON documents, HTML naming agentworld, symbolic links (to a file of the
user's outside the folder, dangling, to a folder), FIFOs, a fake ``.agentworld.lock`` (a link, a FIFO,
a folder, garbage, another command's, or this command's next to a link) and forged marks (a wrong
digest, garbage, a link, a FIFO). None of it is ours, so every case must be refused: exit 2 and one
red line naming the path, no traceback, within the time bound (a FIFO opened blocking would hang),
and nothing anywhere changed — the run folder, the user's folder the links point to, the input.

The CLI properties fork one command per case (:func:`fuzz_harness.run_cli`); the in-process
properties call the guard itself with many more layouts, and check the way back too: what a command
of ours wrote under a claim is accepted again, unless its bytes changed since.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentworld.cli_support import config_of
from agentworld.errors import AgentWorldError
from agentworld.marks import MARK_FORMAT, mark_path
from agentworld.outputs import LOCK_NAME, claim_file, claim_folder, release_all
from fuzz_harness import FOUND, Outcome, count, problems, run_cli, snapshot
from test_outputs import NEEDS, _arguments, _outputs

pytestmark = pytest.mark.fuzz

WRITERS = sorted(_outputs(), key=lambda w: (w[0], w[2].opts[0]))
"""Every (command words, click command, output option) of the command tree."""

NAMES = ["config.json", "predictions.jsonl", "summary.json", "report.html", "scores.json", "status.json",
         "optimize.json", "result.json", "notes.txt", "sub"]
"""Entry names of a hostile folder: the fixed names writers open there, and others."""

_json = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=20),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                  max_size=4),
                     max_leaves=12)
CONTENT = st.one_of(
    st.binary(min_size=1, max_size=300),
    st.lists(st.dictionaries(st.text(max_size=8), _json, min_size=1, max_size=4), min_size=1, max_size=5)
    .map(lambda rows: b"".join(orjson.dumps(r) + b"\n" for r in rows)),
    _json.map(lambda doc: orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"),
    st.text(max_size=80).map(lambda t: f"<!doctype html><title>agentworld</title><p>{t}</p>\n".encode()),
)
"""What a foreign regular file holds: random bytes, JSON lines, a JSON document, an HTML page."""
THING = st.one_of(CONTENT.map(lambda c: ("file", c)),
                  st.sampled_from(["link-file", "link-dangling", "link-folder", "fifo", "sub-link",
                                   "sub-file"]).map(lambda k: (k, b"")))
"""One hostile entry: a foreign file, a link, a FIFO, a sub-folder holding a link or a file."""
LOCKS = st.sampled_from(["none", "link-file", "link-dangling", "fifo", "folder", "garbage", "other-kind",
                         "right-kind"])
MARKS = st.sampled_from(["none", "wrong-digest", "garbage", "link", "fifo", "folder"])


def _kind(writer: tuple[Any, Any, Any]) -> str:
    """``folder`` or ``file``: how the config marks the output option's field."""
    _, command, param = writer
    config = config_of(command.callback)
    field = config.model_fields.get(param.name) if config is not None else None
    extra = field.json_schema_extra if field is not None and isinstance(field.json_schema_extra, dict) else {}
    return str(extra.get("output", "file"))


def _config_name(writer: tuple[Any, Any, Any]) -> str:
    config = config_of(writer[1].callback)
    return config.__name__ if config is not None else "?"


def _siblings(writer: tuple[Any, Any, Any]) -> list[str]:
    config = config_of(writer[1].callback)
    field = config.model_fields.get(writer[2].name) if config is not None else None
    extra = field.json_schema_extra if field is not None and isinstance(field.json_schema_extra, dict) else {}
    siblings = extra.get("siblings")
    return [str(s) for s in siblings] if isinstance(siblings, list) else []


FOLDERS = [w for w in WRITERS if _kind(w) == "folder"]
FILES = [w for w in WRITERS if _kind(w) == "file"]


def _user(root: Path) -> Path:
    """The user's folder outside the run: what the links point to (snapshotted)."""
    user = root / "user"
    if not user.exists():
        (user / "photos").mkdir(parents=True)
        (user / "thesis.txt").write_bytes(b"three years of work\n")
        (user / "photos" / "cat.jpg").write_bytes(b"\xff\xd8 a cat")
    return user


def _place(path: Path, thing: tuple[str, bytes], user: Path) -> None:
    kind, content = thing
    if kind == "file":
        path.write_bytes(content)
    elif kind == "link-file":
        path.symlink_to(user / "thesis.txt")
    elif kind == "link-dangling":
        path.symlink_to(user / "gone")
    elif kind == "link-folder":
        path.symlink_to(user / "photos")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
        if kind == "sub-link":
            (path / "predictions.jsonl").symlink_to(user / "thesis.txt")
        else:
            (path / "notes.txt").write_bytes(b"mine\n")


def _place_lock(folder: Path, lock: str, kind: str, user: Path) -> None:
    path = folder / LOCK_NAME
    records = {"garbage": b"\x00not a lock", "other-kind": b'{"pid": 1, "kind": "SomeOtherConfig"}\n',
               "right-kind": orjson.dumps({"pid": 1, "kind": kind})}
    if lock in records:
        path.write_bytes(records[lock])
    elif lock == "folder":
        path.mkdir()
    elif lock != "none":
        _place(path, (lock, b""), user)  # a link (to a file, dangling) or a FIFO


def _place_mark(output: Path, mark: str, user: Path) -> None:
    where = mark_path(output)
    if mark == "wrong-digest":
        where.write_bytes(orjson.dumps({"mark": MARK_FORMAT, "state": "done", "command": "data convert",
                                        "pid": 1, "size": 3, "sha256": "0" * 64}))
    elif mark == "garbage":
        where.write_bytes(b"{ not a mark")
    elif mark == "link":
        where.symlink_to(user / "thesis.txt")
    elif mark == "fifo":
        os.mkfifo(where)
    elif mark == "folder":
        where.mkdir()


@st.composite
def folder_layouts(draw: Any) -> tuple[list[tuple[str, tuple[str, bytes]]], str]:
    """Entries of a hostile folder and its lock: never one that is ours (empty, or only a lock
    record, or this command's lock without a link or FIFO beside it)."""
    entries = draw(st.lists(st.tuples(st.sampled_from(NAMES), THING), min_size=1, max_size=4,
                            unique_by=lambda e: e[0]))
    lock = draw(LOCKS)
    stray = any(kind not in ("file", "sub-file") for _, (kind, _) in entries)
    if lock == "right-kind" and not stray:
        entries.append(("link", ("link-file", b"")))
    return entries, lock


def _dummy(root: Path) -> Path:
    dummy = root / "input.jsonl"
    dummy.write_text('{"id": "x"}\n')
    return dummy


def _refused(outcome: Outcome, named: Path, before: dict[str, Any], root: Path, target: str) -> None:
    """Exit 2, one red line naming ``named``, no traceback, in time, and nothing under ``root`` changed."""
    found = problems(outcome, allow=(2,))
    if str(named) not in outcome.stderr:
        found.append(f"the error does not name {named}")
    after = snapshot(root)
    if after != before:
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        found.append(f"changed: {changed}")
    if found:
        FOUND[target] += 1
    assert not found, f"{'; '.join(found)}\n{outcome.describe()}"


CLI_EXAMPLES = settings().max_examples * 2
"""The CLI properties run twice the profile's cases (a refusal costs a fork, ~50 ms)."""


@settings(max_examples=CLI_EXAMPLES)
@given(writer=st.sampled_from(FOLDERS), layout=folder_layouts())
def test_every_folder_output_refuses_a_hostile_folder_cli(tmp_path_factory: pytest.TempPathFactory,
                                                          writer: tuple[Any, Any, Any],
                                                          layout: tuple[list[Any], str]) -> None:
    count("outputs: folder --out (CLI)")
    root = tmp_path_factory.mktemp("case")
    user, dummy = _user(root), _dummy(root)
    out = root / "run"
    out.mkdir()
    entries, lock = layout
    for name, thing in entries:
        _place(out / name, thing, user)
    _place_lock(out, lock, _config_name(writer), user)
    before = snapshot(root)
    words, command, param = writer
    argv = [*words, *_arguments(command, param, out, dummy),
            *(a.format(dummy=dummy) for a in NEEDS.get(words, []))]
    _refused(run_cli(argv, cwd=root, timeout_s=20), out, before, root, "outputs: folder --out (CLI)")


@st.composite
def file_layouts(draw: Any, writer: tuple[Any, Any, Any]) -> tuple[str, tuple[str, bytes], str]:
    """Where (the output or one of its siblings), what, and which mark beside it."""
    where = draw(st.sampled_from(["", *_siblings(writer)]))
    return where, draw(THING), draw(MARKS)


@settings(max_examples=CLI_EXAMPLES)
@given(data=st.data())
def test_every_file_output_refuses_a_hostile_file_or_sibling_cli(tmp_path_factory: pytest.TempPathFactory,
                                                                 data: st.DataObject) -> None:
    count("outputs: file --out and siblings (CLI)")
    writer = data.draw(st.sampled_from(FILES))
    where, thing, mark = data.draw(file_layouts(writer))
    root = tmp_path_factory.mktemp("case")
    user, dummy = _user(root), _dummy(root)
    out = root / "out.jsonl"
    hostile = out.with_suffix(where) if where else out
    _place(hostile, thing, user)
    _place_mark(hostile, mark, user)
    before = snapshot(root)
    words, command, param = writer
    argv = [*words, *_arguments(command, param, out, dummy),
            *(a.format(dummy=dummy) for a in NEEDS.get(words, []))]
    _refused(run_cli(argv, cwd=root, timeout_s=20), hostile, before, root,
             "outputs: file --out and siblings (CLI)")


@settings(max_examples=max(100, settings().max_examples * 4))
@given(layout=folder_layouts(), kind=st.sampled_from(["EvalConfig", "SFTConfig"]))
def test_claim_folder_refuses_every_hostile_folder(tmp_path_factory: pytest.TempPathFactory,
                                                   layout: tuple[list[Any], str], kind: str) -> None:
    count("outputs: claim_folder (in process)")
    root = tmp_path_factory.mktemp("case")
    user = _user(root)
    out = root / "run"
    out.mkdir()
    entries, lock = layout
    for name, thing in entries:
        _place(out / name, thing, user)
    _place_lock(out, lock, kind, user)
    before = snapshot(root)
    try:
        with pytest.raises(AgentWorldError, match=str(out)):
            claim_folder(out, kind=kind, command="fuzz")
    finally:
        release_all()
    assert snapshot(root) == before


@settings(max_examples=max(100, settings().max_examples * 4))
@given(thing=THING, mark=MARKS, overwrite=st.booleans())
def test_claim_file_refuses_every_hostile_file_and_accepts_its_own(tmp_path_factory: pytest.TempPathFactory,
                                                                   thing: tuple[str, bytes], mark: str,
                                                                   overwrite: bool) -> None:
    """A hostile file is refused (``--overwrite`` replaces a regular foreign file only, never a link,
    a FIFO or a folder, nor beside a mark that is not a regular file); what a claim of ours wrote is
    accepted again, and refused once its bytes change."""
    count("outputs: claim_file (in process)")
    root = tmp_path_factory.mktemp("case")
    user = _user(root)
    out = root / "out.jsonl"
    _place(out, thing, user)
    _place_mark(out, mark, user)
    before = snapshot(root)
    regular = thing[0] == "file" and mark not in ("link", "fifo", "folder")
    try:
        if overwrite and regular:
            claim_file(out, overwrite=True)
        else:
            with pytest.raises(AgentWorldError, match=str(out)):
                claim_file(out, overwrite=overwrite)
    finally:
        release_all()
    assert snapshot(root) == before  # refused, or claimed and not written: no trace
    mine = root / "mine.jsonl"
    claim_file(mine, command="fuzz")
    mine.write_bytes(thing[1] or b"x")
    release_all()
    claim_file(mine)
    release_all()
    mine.write_bytes((thing[1] or b"x") + b"edited")
    with pytest.raises(AgentWorldError, match="was changed since agentworld wrote it"):
        claim_file(mine)
    release_all()

"""Hypothesis strategies for hostile user files: JSON values, JSON-lines and YAML documents, file kinds.

Why a module of its own: every reader of a user's file (rows, trajectories, tool lists, world folders,
control specs, configs, run folders) meets the same classes of hostile input, so the readers' fuzz
tests (``test_readers.py``) draw from one vocabulary: wrong types in every field, deep nesting, alias
bombs, huge strings, NUL bytes, invalid UTF-8, U+2028/U+2029/U+0085 inside strings, byte-order
marks, truncated lines, duplicate ids, numbers JSON cannot hold (``1e400``, ``NaN``), missing and
extra fields, links out of the folder and FIFOs. A strategy builds a valid document first and then
breaks it, so most cases get past the first check and reach the code behind it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

ODD = ["\x00", "\u2028", "\u2029", "\x85", "\ufeff", "\r", "\x1b[2J", "\ud800", "\udfff", "é", "\U0001f600",
       "\n", "\t", '"', "\\", "{", "<predicted_observation>", "**Environment Observation:**"]
"""Characters and snippets that split, stop or confuse readers (lone surrogates included)."""


@dataclass(frozen=True)
class Raw:
    """Text written into a JSON document as it is: tokens no JSON writer makes (``NaN``, ``1e400``,
    nesting thousands deep) and that a Python value cannot carry."""

    text: str


RAW_NUMBERS = ["1e400", "-1e400", "1e-400", "NaN", "-Infinity", "Infinity", "9" * 400, "-0", "0e0",
               "18446744073709551616", "1.5e308"]

strings = st.lists(st.one_of(st.characters(codec="utf-8"), st.sampled_from(ODD)), max_size=12).map("".join)
HUGE_UNITS = ["x", "a\u2028", "line 12:00:01 pid 42\n", "\x00", "é", "{[", "\ud800"]
huge_strings = st.builds(lambda unit, n: unit * n, st.sampled_from(HUGE_UNITS), st.integers(20_000, 300_000))
deep = st.builds(lambda n, obj: Raw(("{\"a\":" if obj else "[") * n + "0" + ("}" if obj else "]") * n),
                 st.integers(150, 3000), st.booleans())
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), strings,
                    st.sampled_from(RAW_NUMBERS).map(Raw), huge_strings, deep)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(strings, inner, max_size=4)),
                      max_leaves=6)
"""Any JSON-ish value, hostile at every level."""


def dump(value: Any, *, ascii: bool = False) -> str:
    """``value`` as JSON text; :class:`Raw` parts as they are, non-finite floats as ``NaN``/``Infinity``."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ",".join(f"{dump(str(k), ascii=ascii)}:{dump(v, ascii=ascii)}"
                              for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dump(v, ascii=ascii) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii)


def encode(text: str) -> bytes:
    """UTF-8, lone surrogates written as the (invalid) bytes they would be (``surrogatepass``)."""
    return text.encode("utf-8", "surrogatepass")


@st.composite
def broken_mapping(draw: st.DrawFn, base: dict[str, Any]) -> Any:
    """``base`` with some fields set to hostile values, some deleted, some extra ones added; or not a
    mapping at all."""
    if not base or draw(st.integers(0, 19)) == 0:
        return draw(values)
    row: dict[str, Any] = dict(base)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["set", "set", "set", "del", "extra", "nest"]))
        key = draw(st.sampled_from(sorted(base)))
        if op == "set":
            row[key] = draw(values)
        elif op == "del":
            row.pop(key, None)
        elif op == "extra":
            row[draw(strings)] = draw(values)
        elif isinstance(row.get(key), dict):
            row[key] = draw(broken_mapping(row[key]))
        elif isinstance(row.get(key), list) and row[key] and isinstance(row[key][0], dict):
            row[key] = [draw(broken_mapping(row[key][0])), *row[key][1:]]
    return row


def _corrupt(draw: st.DrawFn, data: bytes) -> bytes:
    """Byte-level damage: a byte-order mark, invalid UTF-8, a cut, CRLF ends, NUL bytes."""
    for _ in range(draw(st.integers(0, 2))):
        op = draw(st.sampled_from(["bom", "bytes", "cut", "crlf", "nul"]))
        at = draw(st.integers(0, len(data)))
        if op == "bom":
            data = b"\xef\xbb\xbf" + data
        elif op == "bytes":
            bad = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]))
            data = data[:at] + bad + data[at:]
        elif op == "cut":
            data = data[:at]
        elif op == "crlf":
            data = data.replace(b"\n", b"\r\n")
        else:
            data = data[:at] + b"\x00" + data[at:]
    return data


@st.composite
def jsonl_documents(draw: st.DrawFn, rows: list[dict[str, Any]]) -> bytes:
    """A JSON-lines file of ``rows``, some broken (:func:`broken_mapping`), duplicated or not JSON,
    then damaged at the byte level."""
    lines: list[str] = []
    for row in rows:
        value: Any = draw(broken_mapping(row)) if draw(st.booleans()) else row
        lines.append(dump(value, ascii=draw(st.booleans())))
        if draw(st.integers(0, 5)) == 0:
            lines.append(lines[-1])  # a duplicate id
    if draw(st.integers(0, 5)) == 0:
        stray = draw(st.sampled_from(["null", "[]", "1", '"row"', "{", ""]))
        lines.insert(draw(st.integers(0, len(lines))), stray)
    ends = draw(st.sampled_from(["\n", "\n", "\u2028", "\n\n"]))
    return _corrupt(draw, encode(ends.join(lines) + draw(st.sampled_from(["\n", ""]))))


@st.composite
def json_documents(draw: st.DrawFn, base: dict[str, Any]) -> bytes:
    """One JSON document: ``base`` broken, then damaged at the byte level."""
    return _corrupt(draw, encode(dump(draw(broken_mapping(base)), ascii=draw(st.booleans()))))


def alias_bomb(width: int, levels: int, kind: str) -> str:
    """YAML whose aliases expand to ``width ** levels`` nodes: lists, strings, or merge keys."""
    if kind == "merge":
        lines = ["a0: &a0 {" + ", ".join(f"k{i}: x" for i in range(width)) + "}"]
        lines += [f"a{n}: &a{n} {{<<: [{', '.join([f'*a{n - 1}'] * width)}]}}" for n in range(1, levels)]
    else:
        leaf = "x" if kind == "list" else "'" + "y" * 50_000 + "'"
        lines = [f"a0: &a0 [{', '.join([leaf] * width)}]"]
        lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * width)}]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


YAML_SNIPPETS = ["!!python/object/apply:os.system ['true']", "!!binary aGVsbG8=", "!!set {a, b}",
                 "!!omap [a: 1]", "!!timestamp 2001-12-14", ".nan", "-.inf", "&r [*r]", "*missing",
                 "{? [a]: b}", "'\\x00'", "\"\\0\\u2028\"", "<<: {a: 1}", "0x" + "f" * 400]


@st.composite
def yaml_documents(draw: st.DrawFn, base: dict[str, Any]) -> bytes:
    """A YAML file: ``base`` broken (written as JSON, which YAML reads), an alias bomb beside it, a
    tag or construct a safe loader must refuse, several documents, or deep nesting."""
    text = dump(draw(broken_mapping(base)), ascii=True) if draw(st.booleans()) else dump(base, ascii=True)
    how = draw(st.sampled_from(["as is", "bomb", "bomb", "snippet", "documents", "deep"]))
    if how == "bomb":
        kind = draw(st.sampled_from(["list", "string", "merge"]))
        levels = draw(st.integers(4, 6) if kind == "string" else st.integers(8, 10))
        bomb = alias_bomb(draw(st.integers(9, 12)), levels, kind)
        text = bomb + "\n".join(f"{k}: {v}" for k, v in ((k, dump(v, ascii=True)) for k, v in base.items()))
    elif how == "snippet":
        key = draw(st.sampled_from([*sorted(base), "extra"]))
        text = "\n".join(f"{k}: {dump(v, ascii=True)}" for k, v in base.items() if k != key)
        text += f"\n{key}: {draw(st.sampled_from(YAML_SNIPPETS))}\n"
    elif how == "documents":
        text = f"{text}\n---\n{text}\n"
    elif how == "deep":
        n = draw(st.integers(150, 3000))
        text = "a: " + "[" * n + "]" * n + "\n"
    return _corrupt(draw, encode(text))


FILE_KINDS = ["regular"] * 8 + ["fifo", "directory", "dev-zero", "outside", "dangling"]
"""How a hostile file may be placed: mostly a regular file, else something a reader must refuse
(a FIFO must not hang it, ``/dev/zero`` must not fill memory) or a link leaving its folder."""


def place(path: Path, kind: str, data: bytes, outside: Path) -> None:
    """Put ``data`` at ``path`` as a file of ``kind`` (``outside``: a folder beyond the run folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "regular":
        path.write_bytes(data)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "outside":
        target = outside / path.name
        target.write_bytes(data)
        path.symlink_to(target)
    else:
        path.symlink_to(path.parent / "no-such-file")

"""Crash-safe output: a torn last journal line is ignored and repaired; atomic writes never tear."""

from __future__ import annotations

from pathlib import Path

from agentworld.io import JsonlJournal, atomic_write_text, read_journal


def test_torn_tail_is_skipped_and_repaired(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with JsonlJournal(path) as journal:
        journal.append({"id": 1})
        journal.append({"id": 2})
    with open(path, "a") as handle:
        handle.write('{"id": 3, "trunc')
    assert [r["id"] for r in read_journal(path)] == [1, 2]
    with JsonlJournal(path) as journal:
        journal.append({"id": 4})
    assert [r["id"] for r in read_journal(path)] == [1, 2, 4]


def test_atomic_write_replaces_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "f.txt"
    atomic_write_text(path, "one")
    atomic_write_text(path, "two")
    assert path.read_text() == "two"
    assert [p.name for p in path.parent.iterdir()] == ["f.txt"]

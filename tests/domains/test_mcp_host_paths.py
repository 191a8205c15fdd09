"""The task suite's real servers show no host path, and the memory check reads U+2028 (issue 31).

The filesystem server's errors showed the real temporary folder (``/tmp/agentworld-mcp-PID-…/x``) to
the agent and in recorded rows: only the workspace folder itself was mapped to ``/workspace``, not
the folders above it nor their resolved real paths. And the memory task check split
``memory.jsonl`` with ``str.splitlines``, so an observation holding U+2028 (which the memory
server writes raw) failed a correct episode.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from agentworld.domains.mcp.servers import DISPLAY_ROOT, PathMap, preset
from agentworld.domains.mcp.task_suite import TASKS, check, check_folder, play, start
from agentworld.domains.mcp.task_templates import memory_file

FIRSTS = {t.template: t for t in reversed(TASKS)}
CLIMBS = ["/workspace/../x", "../x", "../../x", "x/../../y", "/workspace/..", "..", "../workspace/../../z"]


def _need(server: str) -> None:
    if why := preset(server).missing():
        pytest.skip(why)


def test_every_host_prefix_of_the_folder_is_shown_as_the_virtual_one(tmp_path: Path) -> None:
    real = tmp_path / "link" / "agentworld-mcp-1-abc" / "workspace"
    (tmp_path / "real" / "agentworld-mcp-1-abc" / "workspace").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    paths = PathMap(str(real))
    resolved = os.path.realpath(real)
    text = (f"{real}/a.txt | {resolved}/b | {real.parent}/stderr.log | {real.parent} | "
            f"{os.path.realpath(real.parent)}/x | {real.parent}-other/y")
    assert paths.shown(text) == (f"/workspace/a.txt | /workspace/b | /stderr.log | / | /x | "
                                 f"{real.parent}-other/y")
    assert [paths.actual(p) for p in CLIMBS] == ["/x", "/x", "/x", "/y", "/", "/", "/z"]
    assert paths.actual("/workspace/d/../a.txt") == f"{real}/a.txt"
    assert paths.actual({"content": "keep ../these /workspace/../words"}) == \
        {"content": f"keep ../these {real}/../words"}  # not a lone path: only the root is swapped


def test_the_filesystem_servers_answers_name_no_host_path(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _need("filesystem")
    (tmp_path / "real-tmp").mkdir()
    (tmp_path / "tmp").symlink_to(tmp_path / "real-tmp")  # a temp folder behind a link, which servers resolve
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    task = FIRSTS["fs_move_file"]
    env = start(task)
    try:
        answers = [env.step(json.dumps({"tool_name": "read_text_file", "arguments": {"path": p}}))
                   for p in CLIMBS]
        answers += play(env, [{"tool": "list_allowed_directories", "arguments": {}},
                              {"tool": "move_file", "arguments": {"source": "/workspace/../nope",
                                                                  "destination": "/workspace/x"}},
                              {"tool": "read_text_file", "arguments": {"path": "/workspace/missing.txt"}},
                              {"tool": "get_file_info", "arguments": {"path": "missing"}}])
        verdict = check(task, env)
    finally:
        env.close()
    for answer in [*answers, *verdict.reasons]:
        assert str(tmp_path) not in answer and "agentworld-mcp" not in answer, answer
    assert answers[0] == "Access denied - path outside allowed directories: /x not in /workspace"
    assert "/workspace/missing.txt" in answers[-2]
    assert answers[len(CLIMBS)] == "Allowed directories:\n/workspace"


def test_a_memory_observation_holding_line_separators_passes_the_check() -> None:
    _need("memory")
    task = FIRSTS["mem_create_entity"]
    env = start(task)
    try:
        play(env, list(task.reference_plan))
        play(env, [{"tool": "create_entities", "arguments": {"entities": [
            {"name": "Note", "entityType": "note", "observations": ["one\u2028two\u2029three\x85four"]}]}}])
        assert "\u2028" in (Path(env.paths.real) / "memory.jsonl").read_text(encoding="utf-8")  # written raw
        assert check(task, env).passed, check(task, env).reasons
    finally:
        env.close()


def test_the_memory_check_splits_on_newlines_only(tmp_path: Path) -> None:
    task = FIRSTS["mem_create_entity"]
    (expected,) = task.expect
    entities = [(expected.name, expected.entity_type, expected.observations),
                ("Note", "note", ("one\u2028two\u2029three\x85four",))]
    (tmp_path / "memory.jsonl").write_text(memory_file(entities)["memory.jsonl"], encoding="utf-8")
    assert check_folder(task, tmp_path).passed
    (tmp_path / "memory.jsonl").write_text('{"type": "entity", "name": \n', encoding="utf-8")
    (reason,) = check_folder(task, tmp_path).reasons
    assert reason.startswith(f"{DISPLAY_ROOT}/memory.jsonl is not the memory server's JSON lines: "
                             f"{DISPLAY_ROOT}/memory.jsonl:1") and str(tmp_path) not in reason

"""The domains' error patterns (``DomainPlugin.error_patterns``) on real errors and their near misses.

Real errors: the reference MCP servers' error results (recorded live through the proxy, and in the
shipped corpus), ``dict_memory``'s missing keys from the real search tools, GNU coreutils' usage and
file errors from real commands. Near misses: the same words in a file's content, in prose, in
``--help`` output, which must stay unmarked.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from agentworld.domains.base import plugin, plugins
from agentworld.domains.error_patterns import ERROR_HINTS
from agentworld.domains.failures import error_patterns, is_error, observation_body
from agentworld.domains.search.tools import SearchTools
from agentworld.envs.search_index import SearchIndex

MARK = "**Environment Observation:**\n"
DOCS = Path(__file__).parents[1] / "fixtures" / "search_docs"
SHELLS = ("terminal", "os", "swe")


def _corpus(domain: str) -> dict[str, str]:
    """Each distinct turn of the domain's shipped corpus (``trajectory#turn``), marker kept."""
    found = plugin(domain)
    path = found.data_file(found.corpus) if found is not None else None
    assert path is not None, domain
    seen: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        base = re.sub(r"-t\d+$", "", row["id"])
        seen.update({f"{base}#{i}": text for i, text in enumerate(row["response"])})
    return seen


def _marked(domain: str) -> set[str]:
    return {key for key, text in _corpus(domain).items() if is_error(text, domain)}


MCP_SERVER_ERRORS = {
    "fs-config-files#8", "fs-dirs-move#5", "fs-dirs-move#8", "fs-explore-project#10", "fs-write-edit#6",
    *(f"fs-outside-root#{i}" for i in (0, 1, 2, 3, 5, 6, 7)),
    "git-branches#5", "git-branches#6", "git-reset#6", "git-reset#7", "git-reset#8", "git-two-commits#5",
    "git-two-commits#7", "memory-bad-input#0", "memory-bad-input#1", "memory-bad-input#5", "memory-delete#8",
    "time-errors#0", "time-errors#1", "time-errors#2", "time-errors#3", "time-now-around-the-world#6",
    "time-now-around-the-world#7",
}
"""The corpus turns whose result the real server flagged ``isError`` (re-recorded: the proxy's
per-turn ``is_error``), 29 of 232."""


def test_mcp_corpus_marks_are_exactly_the_servers_error_results() -> None:
    assert _marked("mcp") == MCP_SERVER_ERRORS


def test_mcp_live_error_results_are_marked_and_successes_are_not() -> None:
    """Scenarios recorded here through the proxy against the real filesystem and memory servers."""
    from agentworld.domains.mcp.recording import record_scenario
    from agentworld.domains.mcp.scenarios import builtin_scenarios, load_scenarios
    from agentworld.domains.mcp.servers import PRESETS
    from agentworld.envs.janitor import Janitor

    if missing := [why for name in ("filesystem", "memory") if (why := PRESETS[name].missing())]:
        pytest.skip("; ".join(missing))
    names = {"fs-outside-root", "fs-dirs-move", "fs-write-edit", "memory-bad-input", "memory-delete"}
    scenarios = [s for s in load_scenarios(builtin_scenarios("train")) if s.name in names]
    assert {s.name for s in scenarios} == names
    flagged = 0
    with Janitor() as janitor:
        for scenario in scenarios:
            for i, turn in enumerate(record_scenario(scenario, janitor=janitor).turns):
                assert is_error(turn.observation, "mcp") == bool(turn.meta["is_error"]), (scenario.name, i,
                                                                                         turn.observation)
                flagged += bool(turn.meta["is_error"])
    assert flagged == 14


@pytest.mark.parametrize("text", [
    "Access denied - symlink target outside allowed directories: /workspace/l not in /workspace",
    "Access denied - Windows-style path received on a POSIX host: C:\\x",
    "Parent directory does not exist: /workspace/new",
    "EACCES: permission denied, open '/workspace/locked.txt'",
    "EXDEV: cross-device link not permitted, rename '/workspace/a' -> '/mnt/b'",
    "EIO: i/o error, read",
    "MCP error -32603: Internal error",
])
def test_mcp_server_error_shapes_not_in_the_corpus_are_failures(text: str) -> None:
    """Messages of the servers' sources (filesystem server's lib.js, libuv's errno texts, the SDK)."""
    assert is_error(MARK + text, "mcp") and is_error(text, "mcp")


@pytest.mark.parametrize("text", [
    # a file read through the filesystem server that logs the server's errors
    "2026-11-30 proxy log\nAccess denied - path outside allowed directories: /etc not in /workspace\n"
    "ENOENT: no such file or directory, open '/workspace/a'\nMCP error -32602: Tool x not found",
    # read_multiple_files: one file missing, the call itself succeeded (the server did not flag it)
    "/workspace/a.txt:\nhello\n\n---\n/workspace/b.txt: Error - ENOENT: no such file or directory, open "
    "'/workspace/b.txt'",
    "Access denied for user 'bob'@'localhost' is what MySQL prints.",
    "ENOENT is the errno of a missing file.",
    '{"entities": [{"name": "Entity with name Lyon not found", "entityType": "note", "observations": []}]}',
    "Destination already exists in the README's wording.",
])
def test_mcp_near_misses_are_not_failures(text: str) -> None:
    assert not is_error(MARK + text, "mcp") and not is_error(text, "mcp")


def test_search_missing_keys_from_the_real_tool_are_failures() -> None:
    tools = SearchTools(SearchIndex.from_folder(DOCS))
    tools.call("dict_memory", {"operation": "add", "dict": {"timed": "when='midnight'"}})
    partial = tools.call("dict_memory", {"operation": "retrieve", "key_list": ["timed", "queue"]})
    missing = tools.call("dict_memory", {"operation": "retrieve", "key_list": ["queue"]})
    assert partial.endswith("\nKey not found: ['queue']") and missing == "Key not found: ['queue']"
    assert is_error(MARK + partial, "search") and is_error(missing, "search")
    assert not is_error(tools.call("dict_memory", {"operation": "retrieve", "key_list": ["timed"]}), "search")
    recorded = {k for k, text in _corpus("search").items() if "\nKey not found: [" in text}
    assert recorded == {"argparse-mutually-exclusive#4", "logging-handlers#6", "memory-housekeeping#4"}
    assert recorded <= _marked("search")


@pytest.mark.parametrize("text", [
    "Raised when a mapping (dictionary) key is not found. Key not found: see KeyError.",
    "Key not found: the lookup failed",
    '{\n  "note": "Key not found: [\'x\'] is what dict_memory says"\n}',
])
def test_search_near_misses_are_not_failures(text: str) -> None:
    assert not is_error(MARK + text, "search")


def _run(tmp_path: Path, script: str) -> str:
    """The terminal screen of a real bash running ``script`` (stdout and stderr, C locale)."""
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}, timeout=30)
    return done.stdout + done.stderr


@pytest.mark.parametrize("script", [
    "ls --frobnicate", "ls -y", "mv", "mkdir", "cp only-one", "head -c", "touch c && mv a b c",
    "mkdir -p a/b && rmdir a", "mkdir a; mkdir a", "touch f && ls f/",
])
def test_coreutils_failures_are_failures_in_every_shell(tmp_path: Path, script: str) -> None:
    output = _run(tmp_path, script)
    screen = f"root@17058d5c0bb2:/app# {script}\n{output}root@17058d5c0bb2:/app#"
    first = f"root@17058d5c0bb2:/app# {script}\n{output.splitlines()[0]}\nroot@17058d5c0bb2:/app#"
    for domain in SHELLS:
        assert is_error(MARK + screen, domain), (domain, screen)
    assert is_error(MARK + first, "terminal"), first  # the error line alone, its "Try …" line left out
    assert not is_error(screen, "search")


def test_recorded_terminal_file_errors_are_failures() -> None:
    screens = _corpus("terminal")
    assert "Read-only file system" in screens["errors-permission#0"]
    assert "Directory not empty" in screens["files-mkdir-tree#4"]
    assert {"errors-permission#0", "errors-permission#2", "files-mkdir-tree#4"} <= _marked("terminal")


@pytest.mark.parametrize("script", [
    "ls --help", "mv --help", "rmdir --help", "cp --version",
    "echo 'note that mv: missing operand is a usage error'",
    "printf 'error: Directory not empty, said the docs\\nTry it: ls --help\\n'",
])
def test_shell_near_misses_are_not_failures(tmp_path: Path, script: str) -> None:
    screen = f"root@17058d5c0bb2:/app# {script}\n{_run(tmp_path, script)}root@17058d5c0bb2:/app#"
    assert not is_error(MARK + screen, "terminal"), screen


def test_every_domains_patterns_have_a_fast_path_and_it_never_changes_the_answer() -> None:
    """Each pattern with regex syntax has its ERROR_HINTS, and the hints only skip texts without a match."""
    for name, found in plugins().items():
        for pattern in found.error_patterns:
            if set(pattern) & set("\\.^$*+?{}[]|()"):
                assert pattern in ERROR_HINTS, (name, pattern)
        if found.data_file(found.corpus) is None:
            continue
        search = re.compile("|".join(f"(?:{p})" for p in error_patterns(name)), re.M)
        for key, text in _corpus(name).items():
            assert is_error(text, name) == (search.search(text) is not None), (name, key)
            assert is_error(text, name) == is_error(observation_body(text), name), (name, key)

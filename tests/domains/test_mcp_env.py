"""The MCP real environment: scenarios recorded through the proxy with a real SDK client against real
servers (npm filesystem/memory, PyPI git), re-recording stability, cleanup after SIGKILL, the real
environment's steps, routing, and the rule-tier contract on the shipped corpus."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from agentworld.domains.base import plugin
from agentworld.domains.mcp.routing import decide, reads_by_name
from agentworld.domains.mcp.scenarios import builtin_scenarios, load_scenarios
from agentworld.domains.mcp.servers import PRESETS
from agentworld.errors import DataError
from agentworld.schema import OBSERVATION_MARKER, load_samples

MAIN = "import sys; from agentworld.cli import main; sys.exit(main())"
RECORDED = ("heldout-fs", "heldout-git", "heldout-memory")
"""Held-out scenarios recorded twice here (the time server's clock makes its turns runtime metadata)."""


def _missing(*servers: str) -> list[str]:
    return [why for name in servers if (why := PRESETS[name].missing())]


def _need(*servers: str) -> None:
    if missing := _missing(*servers):
        pytest.skip("; ".join(missing))


def _last_rows(path: Path) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {r["id"].rpartition("-t")[0]: r for r in rows if r["turn_idx"] == r["total_turns"]}


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    """The same held-out scenarios recorded twice: once by the CLI, once in-process."""
    _need("filesystem", "git", "memory")
    from agentworld.domains.mcp.recording import record_to_jsonl

    folder = tmp_path_factory.mktemp("mcp")
    scenarios = [s for s in load_scenarios(builtin_scenarios("heldout")) if s.name in RECORDED]
    spec = folder / "scenarios.jsonl"
    spec.write_text("".join(s.model_dump_json() + "\n" for s in scenarios))
    first, second = folder / "a.jsonl", folder / "b.jsonl"
    done = subprocess.run([sys.executable, "-c", MAIN, "record", "mcp", "--scenarios", str(spec), "--out",
                           str(first)], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert record_to_jsonl(scenarios, second) == sum(len(s.calls) for s in scenarios)
    return _last_rows(first), _last_rows(second)


Recordings = tuple[dict[str, Any], dict[str, Any]]


def test_recording_twice_gives_the_same_observations(recordings: Recordings) -> None:
    first, second = recordings
    assert sorted(first) == sorted(second) == sorted(RECORDED)
    pairs = [(a, b) for name in first for a, b in zip(first[name]["response"], second[name]["response"],
                                                      strict=True)]
    same = sum(a == b for a, b in pairs)
    assert same / len(pairs) >= 0.95, [(a, b) for a, b in pairs if a != b]
    fs = first["heldout-fs"]
    first_call = '{"tool_name": "list_directory", "arguments": {"path": "/workspace/app"}}'
    assert fs["prompt"][0].endswith(f"{first_call}\n```")
    assert fs["response"][0] == f"{OBSERVATION_MARKER}\n[FILE] README.md\n[FILE] main.py"
    assert "Error" not in first["heldout-git"]["response"][3], "the commit succeeds with the fixed git dates"
    assert '"readOnlyHint": true' in fs["system_str"] and tempfile.gettempdir() not in json.dumps(first)
    assert not list(Path(tempfile.gettempdir()).glob(f"agentworld-mcp-{os.getpid()}-*"))


def test_real_environment_steps_answer_as_the_recorded_rows(recordings: Recordings) -> None:
    from agentworld.domains.base import resolve

    row = recordings[0]["heldout-fs"]
    (scenario,) = [s for s in load_scenarios(builtin_scenarios("heldout")) if s.name == "heldout-fs"]
    mcp = plugin("mcp")
    assert mcp is not None and mcp.environment is not None
    env = resolve(mcp.environment)(seed=0, server="filesystem", files=scenario.files)
    try:
        assert env.initial_observation() == ""
        for action, observation in zip(row["prompt"], row["response"], strict=True):
            assert f"{OBSERVATION_MARKER}\n{env.step(action)}" == observation
        with pytest.raises(ValueError, match="not an MCP tool call"):
            env.step("ls -la")
    finally:
        env.close()
        env.close()


def test_real_environment_without_a_server_starts_the_one_offering_the_first_tool() -> None:
    from agentworld.domains.mcp.env import open_environment

    _need("memory")
    env = open_environment()
    try:
        assert env.step(_call("book_flight", flight="X1")) == (
            "Error: no real MCP server here offers the tool 'book_flight'")
        assert env.server is None and not list(Path(tempfile.gettempdir()).glob(
            f"agentworld-mcp-{os.getpid()}-*"))
        created = env.step(_call("create_entities", entities=[{"name": "Oslo", "entityType": "city",
                                                               "observations": []}]))
        assert env.server is not None and env.server.name == "memory"
        assert json.loads(created) == [{"name": "Oslo", "entityType": "city", "observations": []}]
        assert json.loads(env.step(_call("read_graph")))["entities"][0]["name"] == "Oslo"
    finally:
        env.close()
    assert not list(Path(tempfile.gettempdir()).glob(f"agentworld-mcp-{os.getpid()}-*"))
    with pytest.raises(ValueError, match="closed"):
        env.step(_call("read_graph"))


def test_generic_router_runs_mcp_reads_and_writes_real_until_an_imagined_write() -> None:
    import asyncio

    from agentworld.sim.router import Router

    _need("memory")
    router = Router("rules", domain="mcp")
    try:
        ada = {"name": "Ada", "entityType": "person", "observations": []}
        create = _call("create_entities", entities=[ada])
        assert router.route("mcp", create) == "real"
        assert json.loads(asyncio.run(router.execute(create)))[0]["name"] == "Ada"
        assert router.route("mcp", _call("search_nodes", query="Ada")) == "real"
        assert "Ada" in asyncio.run(router.execute(_call("search_nodes", query="Ada")))
        assert router.route("mcp", _call("update_crm_record", id=7)) == "model" and router.diverged
        assert router.route("mcp", _call("read_graph")) == "model", "after an imagined write, stay imagined"
        assert router.decide("mcp", _call("read_graph")).reason == "an earlier model step changed the world"
    finally:
        router.close()
    assert not list(Path(tempfile.gettempdir()).glob(f"agentworld-mcp-{os.getpid()}-*"))


STUB = """\
import json, os, sys, time
root = sys.argv[1]
with open(os.path.join(root, "pid"), "w") as f:
    f.write(f"{os.getpid()} {os.getppid()}")
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "stub", "version": "1"}}
    elif msg["method"] == "tools/list":
        result = {"tools": [{"name": "hang", "inputSchema": {"type": "object"}}]}
    else:
        time.sleep(3600)
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


def _alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def test_sigkilled_recorder_leaves_no_process_and_no_folder(tmp_path: Path) -> None:
    """The recorder is killed mid-call: its proxy, the server and the server's folder all go."""
    stub, spec = tmp_path / "stub.py", tmp_path / "scenarios.jsonl"
    stub.write_text(STUB)
    spec.write_text(json.dumps({"name": "hang", "server": "time", "calls": [{"tool": "hang"}]}) + "\n")
    command = [sys.executable, "-c", MAIN, "record", "mcp", "--scenarios", str(spec), "--out",
               str(tmp_path / "out.jsonl"), "--", sys.executable, str(stub), "{root}"]
    recorder = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    try:
        pattern = f"agentworld-mcp-{recorder.pid}-*/workspace/pid"
        deadline = time.monotonic() + 120
        while not (found := list(Path(tempfile.gettempdir()).glob(pattern))) or not found[0].read_text():
            assert recorder.poll() is None and time.monotonic() < deadline, "the stub server never started"
            time.sleep(0.1)
        server, proxy = map(int, found[0].read_text().split())
        folder = found[0].parent.parent
        assert _alive(server) and _alive(proxy)
    finally:
        recorder.kill()
        recorder.wait()
    deadline = time.monotonic() + 30
    while (_alive(server) or _alive(proxy) or folder.exists()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(server), "the server outlived the recorder"
    assert not _alive(proxy), "the proxy outlived the recorder"
    assert not folder.exists(), "the server's folder outlived the recorder"


def test_bad_scenario_file_is_one_clear_error(tmp_path: Path) -> None:
    spec = tmp_path / "s.jsonl"
    spec.write_text('{"name": "ok", "server": "time", "calls": [{"tool": "convert_time"}]}\n'
                    '{"name": "x", "server": "ftp", "calls": [{"tool": "get"}]}\n')
    with pytest.raises(DataError, match=r"s\.jsonl:2, sample 'x', field 'server': unknown server 'ftp'"):
        load_scenarios(spec)
    spec.write_text('{"name": "y", "server": "filesystem", "files": {"../x": ""}, '
                    '"calls": [{"tool": "a"}]}\n')
    with pytest.raises(DataError, match=r"field 'files'.*must be relative"):
        load_scenarios(spec)
    done = subprocess.run([sys.executable, "-c", MAIN, "record", "mcp", "--scenarios", str(spec), "--out",
                           str(tmp_path / "o.jsonl")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "must be relative" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "o.jsonl").exists()


def _call(tool: str, **arguments: Any) -> str:
    return "**Action:**\n```json\n" + json.dumps({"tool_name": tool, "arguments": arguments}) + "\n```"


def test_routing_reads_annotations_then_names() -> None:
    tools = [{"name": "read_graph", "annotations": {"readOnlyHint": True}},
             {"name": "create_entities", "annotations": {"readOnlyHint": False}},
             {"name": "web_fetch", "annotations": {"readOnlyHint": True, "openWorldHint": True}},
             {"name": "send_mail", "annotations": {"openWorldHint": True}},
             {"name": "getUser"}, {"name": "delete_user"}]
    got = {name: decide(_call(name), tools) for name in
           ("read_graph", "create_entities", "web_fetch", "send_mail", "getUser", "delete_user", "list_pets")}
    assert {n: (d.route, d.side_effects) for n, d in got.items()} == {
        "read_graph": ("real", False), "create_entities": ("real", True), "web_fetch": ("model", False),
        "send_mail": ("model", True), "getUser": ("real", False), "delete_user": ("real", True),
        "list_pets": ("model", False)}
    assert "no real server here offers 'list_pets'" in got["list_pets"].reason
    assert decide({"tool_name": "read_graph", "arguments": {}}, tools) == got["read_graph"]
    assert decide("not json at all", tools) == decide("", tools)
    assert decide("", tools).route == "model" and not decide("", tools).side_effects
    assert [reads_by_name(n) for n in ("git_log", "listDirectory", "git_commit", "ReadFile", "update")] == [
        True, True, False, True, False]


def test_routing_knows_the_recorded_servers_tools() -> None:
    assert decide(_call("git_status", repo_path="/workspace")).route == "real"
    assert not decide(_call("git_status", repo_path="/workspace")).side_effects
    write = decide(_call("write_file", path="/workspace/a", content="x"))
    assert write.route == "real" and write.side_effects
    assert decide(_call("book_flight", flight="X1")).route == "model"


def test_mcp_corpus_holds_the_rule_contract() -> None:
    """Rows of four real servers: the truth near 100, know-nothing answers near 0, retrieval (the offline
    model, which must not crash on MCP rows) above repeating the previous observation."""
    from agentworld.eval.rules.contract import measure_contract

    mcp = plugin("mcp")
    assert mcp is not None
    path = mcp.data_file(mcp.corpus)
    assert path is not None and path.is_file()
    samples = load_samples([path])
    report = measure_contract(samples)
    assert report.domain == "mcp" and report.samples >= 200 and report.with_content > 0
    assert report.violations() == []
    assert report.retrieval is not None and report.retrieval > report.baselines["repeat_previous"]
    servers = {s.meta["server"] for s in samples if s.meta}
    assert servers == {"filesystem", "git", "memory", "time"}


def test_time_server_clock_is_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    from zoneinfo import ZoneInfo

    from agentworld.domains.mcp.frozen_time import FROZEN_NOW, FrozenDatetime

    assert FrozenDatetime.now(ZoneInfo("America/New_York")).isoformat() == "2025-06-16T06:00:00-04:00"
    assert FrozenDatetime.now(ZoneInfo("UTC")).isoformat() == FROZEN_NOW
    monkeypatch.setenv("AGENTWORLD_FROZEN_NOW", "2024-12-31T23:30:00+00:00")
    tokyo = FrozenDatetime.now(ZoneInfo("Asia/Tokyo"))
    assert tokyo.strftime("%A %Y-%m-%d %H:%M") == "Wednesday 2025-01-01 08:30"


def test_scenarios_of_missing_servers_are_skipped_and_none_at_all_is_one_error(tmp_path: Path) -> None:
    spec = tmp_path / "s.jsonl"
    spec.write_text(json.dumps({"name": "a", "server": "filesystem", "calls": [{"tool": "list_directory"}]}))
    env = {**os.environ, "AGENTWORLD_MCP_SERVERS": str(tmp_path / "none")}
    done = subprocess.run([sys.executable, "-c", MAIN, "record", "mcp", "--scenarios", str(spec), "--out",
                           str(tmp_path / "o.jsonl")], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2 and not (tmp_path / "o.jsonl").exists()
    assert "no server of these scenarios is installed: filesystem: @modelcontextprotocol/server-filesystem " \
           "is not installed" in done.stderr

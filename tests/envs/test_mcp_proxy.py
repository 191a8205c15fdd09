"""``agentworld record mcp``: a real client, the proxy and a real server (mcp-server-git, or our own
streamable-HTTP server) — the client must see exactly what a direct session shows, and the recording
must hold the session."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from agentworld.data.ingest import ingest
from agentworld.domains.mcp.rows import ROWS
from agentworld.envs.mcp_proxy import SessionRecorder, observation_of, rpc_messages
from agentworld.envs.mcp_proxy_http import SseParser
from agentworld.io import read_journal
from agentworld.schema import parse_row
from agentworld.serve.mock_server import MockConfig, run_mock_server
from mcp_proxy_helpers import child_env, proxy_cmd, started, upstream_cmd

pytest.importorskip("mcp_server_git")

TEE = """\
import os, subprocess, sys, threading
log = sys.argv[1]
proc = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
def pump(src, dst, path, done):
    with open(path, "wb") as f:
        try:
            while data := os.read(src, 65536):
                f.write(data); f.flush()
                while data:
                    data = data[os.write(dst, data):]
        except OSError:
            pass
    done()
args = (0, proc.stdin.fileno(), log + ".in", proc.stdin.close)
threading.Thread(target=pump, args=args, daemon=True).start()
pump(proc.stdout.fileno(), 1, log + ".out", lambda: os.close(1))
sys.exit(proc.wait())
"""
"""Runs a command and copies the bytes of its stdin and stdout to LOG.in and LOG.out."""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    date = "2024-01-01T00:00:00Z"
    env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    (path / "a.txt").write_text("hello\n")
    commit = ["-c", "user.name=T", "-c", "user.email=t@t", "commit", "-qm", "1"]
    for args in (["init", "-q"], ["add", "a.txt"], commit):
        subprocess.run(["git", *args], cwd=path, check=True, env=env)
    (path / "a.txt").write_text("changed\n")
    return path


def git_server(repo: Path) -> list[str]:
    return [sys.executable, "-m", "mcp_server_git", "--repository", str(repo)]


async def git_session(params: StdioServerParameters, repo: Path) -> dict[str, Any]:
    """List tools, two good calls, one call with bad arguments, one unknown tool; what the client saw."""
    async with Client(params) as client:
        seen: dict[str, Any] = {"tools": (await client.list_tools()).model_dump()}
        where = str(repo)
        seen["status"] = (await client.call_tool("git_status", {"repo_path": where})).model_dump()
        seen["log"] = (await client.call_tool("git_log", {"repo_path": where, "max_count": 5})).model_dump()
        seen["bad"] = (await client.call_tool("git_log", {"repo_path": where, "max_count": "x"})).model_dump()
        with pytest.raises(MCPError, match="git_teleport") as info:
            await client.call_tool("git_teleport", {})
        seen["unknown"] = str(info.value)
    return seen


def stdio(command: list[str]) -> StdioServerParameters:
    return StdioServerParameters(command=command[0], args=command[1:], env=child_env())


def test_stdio_proxy_is_transparent_byte_exact_and_records(tmp_path: Path, repo: Path) -> None:
    tee = tmp_path / "tee.py"
    tee.write_text(TEE)
    out = tmp_path / "rec.jsonl"
    server = [sys.executable, str(tee), str(tmp_path / "server"), *git_server(repo)]
    proxied = [sys.executable, str(tee), str(tmp_path / "client"), *proxy_cmd(out, "--", *server)]

    direct = asyncio.run(git_session(stdio(git_server(repo)), repo))
    through = asyncio.run(git_session(stdio(proxied), repo))

    assert through == direct  # same tools list, same results, same errors
    assert direct["bad"]["is_error"] and "max_count" in direct["bad"]["content"][0]["text"]
    client_in, server_in = (tmp_path / "client.in").read_bytes(), (tmp_path / "server.in").read_bytes()
    client_out, server_out = (tmp_path / "client.out").read_bytes(), (tmp_path / "server.out").read_bytes()
    assert client_in == server_in and b'"git_status"' in client_in
    assert client_out == server_out and b"Repository status" in client_out

    rows = list(read_journal(out))  # one row per answered call, written as it was answered
    assert [(r["turn_idx"], len(r["prompt"])) for r in rows] == [(1, 1), (2, 2), (3, 3), (4, 4)]
    assert all(parse_row(r).ground_truth == rows[-1]["response"][i] for i, r in enumerate(rows))
    (traj,) = ingest(out)  # the rows of one session are one trajectory
    assert traj.id == rows[0]["id"].rsplit("-t", 1)[0] and "incremental" not in traj.meta
    actions = [t.action for t in traj.turns]
    assert [json.loads(a.split("```json\n")[1].split("\n```")[0])["tool_name"] for a in actions] == [
        "git_status", "git_log", "git_log", "git_teleport"]
    assert actions[0] == ('**Action:**\n```json\n{"tool_name": "git_status", "arguments": {"repo_path": '
                          f'{json.dumps(str(repo))}}}}}\n```')
    status_text = direct["status"]["content"][0]["text"]
    observations = [t.observation for t in traj.turns]
    assert observations[0] == f"**Environment Observation:**\n{status_text}"
    assert observations[2] == "**Environment Observation:**\n" + direct["bad"]["content"][0]["text"]
    assert observations[3] == "**Environment Observation:**\nError: Unknown tool: git_teleport"
    assert "# Available tools" in traj.system_prompt
    tools = json.loads(traj.system_prompt.split("# Available tools\n", 1)[1])["tools"]
    assert [t["name"] for t in tools] == [t["name"] for t in direct["tools"]["tools"]]
    meta = traj.meta
    assert meta["origin"] == "real" and meta["server"]["name"] == "mcp-git" and meta["calls"] == 4
    assert meta["server_command"] == server
    assert [t["is_error"] for t in meta["turns"]] == [False, False, True, True]
    assert all(t["latency_s"] >= 0 for t in meta["turns"])


def test_stdio_exit_codes(tmp_path: Path) -> None:
    out = tmp_path / "rec.jsonl"
    failing = [sys.executable, "-c", "import sys; sys.stdin.read(); sys.exit(3)"]
    done = subprocess.run(proxy_cmd(out, "--", *failing), input=b"", capture_output=True, timeout=30)
    assert done.returncode == 3 and done.stdout == b""
    missing = subprocess.run(proxy_cmd(out, "--", str(tmp_path / "no-such-server")), input=b"",
                             capture_output=True, timeout=30)
    assert missing.returncode == 127 and b"cannot start" in missing.stderr
    assert not list(read_journal(out))
    neither = subprocess.run(proxy_cmd(out), capture_output=True, timeout=30)
    assert neither.returncode == 2


def test_stdio_proxy_stopped_mid_session_still_records(tmp_path: Path, repo: Path) -> None:
    out = tmp_path / "rec.jsonl"
    proc = subprocess.Popen(proxy_cmd(out, "--", *git_server(repo)), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=child_env())
    assert proc.stdin is not None and proc.stdout is not None
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    for message in ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
                    {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "git_status", "arguments": {"repo_path": str(repo)}}}):
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
    replies = [json.loads(proc.stdout.readline()) for _ in range(2)]
    assert replies[1]["id"] == 2 and "Repository status" in replies[1]["result"]["content"][0]["text"]
    proc.send_signal(signal.SIGTERM)  # the client side never closed: the proxy is stopped mid-session
    proc.wait(timeout=15)
    rows = list(read_journal(out))
    assert len(rows) == 1 and rows[0]["meta"]["server"]["name"] == "mcp-git"
    assert rows[0]["meta"]["protocol_version"] == replies[0]["result"]["protocolVersion"]


# -- HTTP ---------------------------------------------------------------------------------------

async def http_session(url: str, mode: str) -> dict[str, Any]:
    async with Client(url, mode=mode) as client:
        seen: dict[str, Any] = {"tools": (await client.list_tools()).model_dump()}
        seen["bad"] = (await client.call_tool("get_user_details", {"user_id": 42})).model_dump()
        seen["unknown"] = (await client.call_tool("book_spaceship", {"to": "Mars"})).model_dump()
        seen["ok"] = (await client.call_tool("get_user_details", {"user_id": "u1"})).model_dump()
    return seen


def test_http_proxy_is_transparent_and_records(tmp_path: Path) -> None:
    out = tmp_path / "rec.jsonl"
    with run_mock_server(MockConfig()) as mock_url, started(upstream_cmd(mock_url)) as upstream, started(
            proxy_cmd(out, "--url", upstream, "--listen-port", "0", "--name", "airline")) as proxy:
        direct = asyncio.run(http_session(upstream, "legacy"))
        through = asyncio.run(http_session(proxy, "legacy"))
        assert through == direct
        assert direct["bad"]["is_error"] and not direct["ok"]["is_error"]
        written = list(read_journal(out))  # the legacy client ended its session with DELETE
        assert len(written) == 3 and all(r["meta"]["session_id"] for r in written)
        assert asyncio.run(http_session(proxy, "auto")) == asyncio.run(http_session(upstream, "auto"))
        body = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}
        headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28"}
        a, b = (httpx.post(u, json=body, headers=headers) for u in (upstream, proxy))
        assert (a.status_code, a.headers["content-type"], a.content) == (
            b.status_code, b.headers["content-type"], b.content)
    trajs = list(ingest(out))  # the legacy session, then the auto one
    assert len(trajs) == 2 and all(t.id.startswith("airline-") for t in trajs)
    first = trajs[0]
    assert len(first.turns) == 3 and first.domain == "mcp"
    assert '"tool_name": "book_spaceship"' in first.turns[1].action
    assert first.turns[0].observation.startswith("**Environment Observation:**\nError: invalid arguments")
    assert "# Available tools" in first.system_prompt and "get_user_details" in first.system_prompt
    meta = first.meta
    assert meta["transport"] == "streamable-http" and meta["server_url"].endswith("/mcp")
    assert [t["is_error"] for t in meta["turns"]] == [True, True, False]


# -- pieces -------------------------------------------------------------------------------------


def test_sse_parser_and_observations() -> None:
    parser = SseParser()
    stream = (b'event: message\r\ndata: {"jsonrpc":"2.0","id":1,\r\ndata: "result":{}}\r\n\r\n'
              b": ping\n\ndata: [1")
    assert parser.feed(stream[:20]) == []
    assert parser.feed(stream[20:]) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    assert parser.end() == []  # an unfinished, malformed event is dropped, never raised
    assert rpc_messages(b'[{"id": 1}, 2]') == [{"id": 1}]
    structured = {"result": {"content": [], "structuredContent": {"n": 1}}}
    assert observation_of(structured) == ('**Environment Observation:**\n{"n": 1}', False)
    assert observation_of({"error": {"code": -32602, "message": "bad"}}) == (
        "**Environment Observation:**\nError: bad", True)
    texts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    mixed = {"result": {"isError": True, "content": texts}}
    assert observation_of(mixed) == ("**Environment Observation:**\na\nb", True)


def test_recorder_matches_ids_and_skips_unanswered() -> None:
    rec = SessionRecorder(ROWS, name="x")
    rec.from_client({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "a"}})
    rec.from_client({"jsonrpc": "2.0", "id": "1", "method": "tools/call", "params": {"name": "b"}})
    rec.from_server({"jsonrpc": "2.0", "id": "1", "result": {"content": [{"type": "text", "text": "B"}]}})
    traj = rec.trajectory()
    assert traj is not None and traj.id.startswith("x-")
    assert [t.observation for t in traj.turns] == ["**Environment Observation:**\nB"]
    assert traj.meta["unanswered"] == 1 and "# Available tools" not in traj.system_prompt
    assert SessionRecorder(ROWS).trajectory() is None

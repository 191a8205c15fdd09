"""``agentworld record mcp``: a recording proxy between any MCP client and a real MCP server.

Why: an MCP world model is trained and scored on real tool results, recorded from sessions the
client cannot tell from direct ones. So bytes are relayed as read, and JSON-RPC messages are parsed
from *copies* (newline-delimited here on stdio; HTTP: :mod:`agentworld.envs.mcp_proxy_http`). Each
session becomes one ``mcp`` :class:`~agentworld.schema.Trajectory` (a turn per ``tools/call``, texts
in the simulator's form), appended crash-safely as AgentWorldBench rows with a ``meta``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from agentworld.domains import DOMAINS
from agentworld.io import JsonlJournal
from agentworld.schema import OBSERVATION_MARKER, Trajectory, Turn
from agentworld.sim.history import ParsedAction

DOMAIN = "mcp"
CHUNK = 65536
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"


def rpc_messages(raw: bytes | bytearray | str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of one message or batch; none if unreadable (the proxy never judges traffic)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return []
    items = data if isinstance(data, list) else [data]
    return [m for m in items if isinstance(m, dict)]


def format_action(tool_name: str, arguments: Any) -> str:
    """The action text of a tool call, exactly as the simulator renders MCP actions."""
    args = arguments if arguments is not None else {}
    return ParsedAction(payload={"tool_name": tool_name, "arguments": args}, key=tool_name).text(DOMAIN)


def _block_text(block: Any) -> str:
    if isinstance(block, dict):
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            return block["text"]
        resource = block.get("resource")
        if isinstance(resource, dict) and isinstance(resource.get("text"), str):
            return str(resource["text"])
    return json.dumps(block, ensure_ascii=False)


def result_text(result: Any) -> str:
    """A ``tools/call`` result's text contents joined (other blocks as JSON), else its structured content."""
    if not isinstance(result, dict):
        return json.dumps(result, ensure_ascii=False)
    content = result.get("content")
    parts = [_block_text(b) for b in content] if isinstance(content, list) else []
    if parts:
        return "\n".join(parts)
    structured = result.get("structuredContent")
    return json.dumps(structured, ensure_ascii=False) if structured is not None else ""


def observation_of(response: dict[str, Any]) -> tuple[str, bool]:
    """Observation text and error flag of a ``tools/call`` response (a result or a JSON-RPC error)."""
    if "error" in response:
        error = response["error"]
        message = error.get("message", "") if isinstance(error, dict) else str(error)
        return f"{OBSERVATION_MARKER}\nError: {message}", True
    result = response.get("result")
    is_error = bool(result.get("isError")) if isinstance(result, dict) else False
    return f"{OBSERVATION_MARKER}\n{result_text(result)}", is_error


def clock() -> tuple[str, float]:
    """Wall-clock (ISO) and monotonic time now: when a message passed the proxy."""
    return datetime.now(UTC).isoformat(timespec="milliseconds"), time.monotonic()


@dataclass
class _Call:
    name: str
    arguments: Any
    sent: tuple[str, float]
    response: dict[str, Any] | None = None
    received: tuple[str, float] = ("", 0.0)


@dataclass
class SessionRecorder:
    """One client session: server identity, tool list, each tool call (in send order) with its answer.

    Fed parsed copies of both directions' messages (any thread); an unanswered call is only counted.
    """

    name: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    started: tuple[str, float] = field(default_factory=clock)
    server_info: dict[str, Any] | None = None
    protocol_version: str | None = None
    tools: list[Any] | None = None
    calls: list[_Call] = field(default_factory=list)
    _pending: dict[str, tuple[str, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def from_client(self, message: dict[str, Any], *, when: tuple[str, float] | None = None) -> None:
        """Note a client request (a response to a server request carries no ``method`` and is skipped)."""
        method, key = message.get("method"), _id_key(message)
        if not isinstance(method, str) or key is None:
            return
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        with self._lock:
            if method == "tools/call":
                call = _Call(str(params.get("name")), params.get("arguments"), when or clock())
                self.calls.append(call)
                self._pending[key] = (method, call)
            elif method == "tools/list":
                self._pending[key] = (method, params)

    def from_server(self, message: dict[str, Any]) -> None:
        """Match a server response to its request by id."""
        key = _id_key(message)
        if "method" in message or key is None:
            return
        with self._lock:
            method, what = self._pending.pop(key, ("", None))
            result = message.get("result")
            if isinstance(result, dict):
                self._note_identity(result)
            if method == "tools/call":
                what.response, what.received = message, clock()
            elif method == "tools/list" and isinstance(result, dict) and isinstance(result.get("tools"),
                                                                                    list):
                paged = isinstance(what, dict) and what.get("cursor") is not None and self.tools is not None
                self.tools = [*(self.tools or []), *result["tools"]] if paged else list(result["tools"])

    def _note_identity(self, result: dict[str, Any]) -> None:
        """Server name/version from ``initialize`` or (2026 protocol) any result's ``_meta``."""
        meta = result.get("_meta")
        info = result.get("serverInfo", meta.get(SERVER_INFO_META) if isinstance(meta, dict) else None)
        if isinstance(info, dict) and self.server_info is None:
            self.server_info = info
        versions = [result.get("protocolVersion"), *(result.get("supportedVersions") or [])[-1:]]
        known = [v for v in versions if isinstance(v, str)]
        self.protocol_version = self.protocol_version or (known[0] if known else None)

    def trajectory(self) -> Trajectory | None:
        """The session as a trajectory, or ``None`` when no tool call was answered."""
        with self._lock:
            answered = [c for c in self.calls if c.response is not None]
            turns = [_turn(c) for c in answered]
            if not turns:
                return None
            server = dict(self.server_info or {})
            meta = {"source": "real", "recorder": "agentworld record mcp", **self.meta, "server": server,
                    "protocol_version": self.protocol_version, "started_at": self.started[0],
                    "ended_at": clock()[0], "elapsed_s": round(time.monotonic() - self.started[1], 3),
                    "calls": len(turns), "unanswered": len(self.calls) - len(turns),
                    "turns": [t.meta for t in turns]}
            prefix = self.name or str(server.get("name") or DOMAIN)
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
            return Trajectory(id=f"{prefix}-{stamp}-{uuid.uuid4().hex[:8]}", domain=DOMAIN, task=DOMAIN,
                              system_prompt=build_system_prompt(self.tools),
                              turns=tuple(turns), meta=meta)


def _id_key(message: dict[str, Any]) -> str | None:
    """A hashable form of a JSON-RPC id that keeps ``1`` and ``"1"`` apart."""
    if "id" not in message or message["id"] is None:
        return None
    return json.dumps(message["id"])


def _turn(call: _Call) -> Turn:
    observation, is_error = observation_of(call.response or {})
    meta = {"tool": call.name, "latency_s": round(call.received[1] - call.sent[1], 4), "is_error": is_error,
            "sent_at": call.sent[0], "received_at": call.received[0]}
    return Turn(action=format_action(call.name, call.arguments), observation=observation, meta=meta)


def build_system_prompt(tools: list[Any] | None) -> str:
    """The mcp domain system prompt plus the server's tool list, as the simulator builds it."""
    parts = [DOMAINS[DOMAIN].system_prompt.rstrip()]
    if tools:
        parts.append("# Available tools\n" + json.dumps({"tools": tools}, indent=2, ensure_ascii=False))
    return "\n\n".join(parts)


def trajectory_rows(trajectory: Trajectory) -> list[dict[str, Any]]:
    """AgentWorldBench rows, each carrying the recording's ``meta`` (as the terminal recorder writes)."""
    return [{**s.to_row(), "meta": trajectory.meta} for s in trajectory.samples()]


def log(text: str) -> None:
    """Report on stderr: on stdio, stdout carries the protocol and nothing else."""
    print(f"agentworld: {text}", file=sys.stderr, flush=True)


class TrajectorySink:
    """Appends finished sessions to the output journal, one whole trajectory at a time (any thread)."""

    def __init__(self, out: str | Path) -> None:
        self.journal = JsonlJournal(out)
        self._lock = threading.Lock()

    def write(self, recorder: SessionRecorder) -> Trajectory | None:
        """Write one ended session's trajectory, if it answered any tool call."""
        with self._lock:
            traj = recorder.trajectory()
            if traj is None:
                log("session ended without answered tool calls; nothing recorded")
                return None
            for row in trajectory_rows(traj):
                self.journal.append(row)
            log(f"recorded {len(traj.turns)} tool call(s) as {traj.id} → {self.journal.path}")
            return traj

    def close(self) -> None:
        self.journal.close()


# -- stdio --------------------------------------------------------------------------------------
def _pump(src: int, dst: int, on_line: Callable[[dict[str, Any]], None], on_end: Callable[[], None]) -> None:
    """Relay bytes ``src`` → ``dst`` unchanged; parse copies of each line (the stdio framing) to record."""
    buffer = bytearray()
    try:
        while data := os.read(src, CHUNK):
            view = memoryview(data)
            while view:
                view = view[os.write(dst, view):]
            buffer += data
            if b"\n" in data:
                *lines, rest = buffer.split(b"\n")
                buffer = bytearray(rest)
                for message in (m for line in lines if line.strip() for m in rpc_messages(line)):
                    on_line(message)
    except OSError:
        pass  # a closed peer: end this direction, the other side notices on its own
    finally:
        on_end()


def run_stdio_proxy(command: Sequence[str], out: str | Path, *, name: str | None = None) -> int:
    """Run ``command`` as the real server, relay our stdin/stdout to it, record; return its exit code.

    Why threads on raw file descriptors: no event loop, buffering or decoding can touch the bytes,
    and a blocked read on one direction never delays the other. SIGTERM/SIGINT are forwarded to
    the server so the session still ends through the normal path and is written.
    """
    sink = TrajectorySink(out)
    recorder = SessionRecorder(name=name, meta={"transport": "stdio", "server_command": list(command)})
    try:
        proc = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    except OSError as exc:
        sink.close()
        log(f"cannot start the MCP server {command[0]!r}: {exc}")
        return 127
    assert proc.stdin is not None and proc.stdout is not None
    server_in, server_out = proc.stdin.fileno(), proc.stdout.fileno()

    def forward(signum: int, _frame: Any) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    upstream = threading.Thread(target=_pump, args=(0, server_in, recorder.from_client, proc.stdin.close),
                                daemon=True)
    downstream = threading.Thread(target=_pump, args=(server_out, 1, recorder.from_server, sys.stdout.close),
                                  daemon=True)
    try:
        upstream.start()
        downstream.start()
        returncode = proc.wait()
        downstream.join(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        try:
            sink.write(recorder)
        finally:
            sink.close()
    return 128 - returncode if returncode < 0 else returncode  # killed by a signal: as a shell says

"""``agentworld record mcp``: a recording proxy between any MCP client and a real MCP server.

Why: an MCP world model is trained and scored on real tool results, recorded from sessions the
client cannot tell from direct ones. So bytes are relayed as read, and JSON-RPC messages are parsed
from *copies* (stdio: :mod:`agentworld.envs.mcp_proxy_stdio`; HTTP:
:mod:`agentworld.envs.mcp_proxy_http`). This module is what both share: each session becomes one
``mcp`` trajectory (a turn per ``tools/call``, texts in the simulator's form), and each answered
call is appended as it happens as an AgentWorldBench row with a ``meta`` (see
:meth:`SessionRecorder.new_rows`), which the ``recording`` ingest format joins back.

The proxy knows the protocol, not the domain: how a call reads as an action and which system prompt a
row carries come from a :class:`RowLayout` the caller passes (the MCP domain's is
``agentworld.domains.mcp.record.ROWS``), so ``envs/`` imports nothing from ``domains/``.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from agentworld.io import JsonlJournal
from agentworld.schema import OBSERVATION_MARKER, Trajectory, Turn

SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"


def rpc_messages(raw: bytes | bytearray | str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of one message or batch; none if unreadable (the proxy never judges traffic)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return []
    items = data if isinstance(data, list) else [data]
    return [m for m in items if isinstance(m, dict)]


@dataclass(frozen=True)
class RowLayout:
    """What a recorded session's rows say beyond the traffic: supplied by the domain that records.

    Attributes:
        task: the rows' ``task`` (their domain).
        action: the action text of a tool call, from its name and arguments.
        system_prompt: the rows' system prompt, from the server's tool list (``None``: never listed).
    """

    task: str
    action: Callable[[str, Any], str]
    system_prompt: Callable[[list[Any] | None], str]


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


def response_text(response: dict[str, Any]) -> tuple[str, bool]:
    """Text and error flag of a ``tools/call`` response (a result or a JSON-RPC error), no marker."""
    if "error" in response:
        error = response["error"]
        message = error.get("message", "") if isinstance(error, dict) else str(error)
        return f"Error: {message}", True
    result = response.get("result")
    is_error = bool(result.get("isError")) if isinstance(result, dict) else False
    return result_text(result), is_error


def observation_of(response: dict[str, Any]) -> tuple[str, bool]:
    """Observation text (with its marker, as rows hold it) and error flag of a ``tools/call`` response."""
    text, is_error = response_text(response)
    return f"{OBSERVATION_MARKER}\n{text}", is_error


def clock() -> tuple[str, float]:
    """Wall-clock (ISO) and monotonic time now: when a message passed the proxy."""
    return datetime.now(UTC).isoformat(timespec="milliseconds"), time.monotonic()


@dataclass
class _Call:
    name: str
    arguments: Any
    sent: tuple[str, float]


@dataclass
class SessionRecorder:
    """One client session: server identity, tool list, and each tool call with its answer.

    Fed parsed copies of both directions' messages (any thread); ``layout`` says how they read as
    rows. Turns are kept in the order the answers arrived (for calls in flight together, the order
    the server finished them), so a turn is final once written; an unanswered call is only counted.
    :meth:`new_rows` hands out the rows of the turns answered since it was last called.
    """

    layout: RowLayout
    name: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    started: tuple[str, float] = field(default_factory=clock)
    server_info: dict[str, Any] | None = None
    protocol_version: str | None = None
    tools: list[Any] | None = None
    turns: list[Turn] = field(default_factory=list)
    trajectory_id: str | None = None
    _pending: dict[str, tuple[str, Any]] = field(default_factory=dict)
    _written: int = 0
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def from_client(self, message: dict[str, Any], *, when: tuple[str, float] | None = None) -> None:
        """Note a client request (a response to a server request carries no ``method`` and is skipped)."""
        method, key = message.get("method"), _id_key(message)
        if not isinstance(method, str) or key is None:
            return
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        with self._lock:
            if method == "tools/call":
                self._pending[key] = (method, _Call(str(params.get("name")), params.get("arguments"),
                                                    when or clock()))
            elif method == "tools/list":
                self._pending[key] = (method, params)

    def from_server(self, message: dict[str, Any]) -> bool:
        """Match a server response to its request by id; true when it answered a tool call."""
        key = _id_key(message)
        if "method" in message or key is None:
            return False
        with self._lock:
            method, what = self._pending.pop(key, ("", None))
            result = message.get("result")
            if isinstance(result, dict):
                self._note_identity(result)
            if method == "tools/call":
                self.turns.append(_turn(self.layout, what, message, clock()))
                return True
            if method == "tools/list" and isinstance(result, dict) and isinstance(result.get("tools"), list):
                paged = isinstance(what, dict) and what.get("cursor") is not None and self.tools is not None
                self.tools = [*(self.tools or []), *result["tools"]] if paged else list(result["tools"])
            return False

    def _note_identity(self, result: dict[str, Any]) -> None:
        """Server name/version from ``initialize`` or (2026 protocol) any result's ``_meta``."""
        meta = result.get("_meta")
        info = result.get("serverInfo", meta.get(SERVER_INFO_META) if isinstance(meta, dict) else None)
        if isinstance(info, dict) and self.server_info is None:
            self.server_info = info
        versions = [result.get("protocolVersion"), *(result.get("supportedVersions") or [])[-1:]]
        known = [v for v in versions if isinstance(v, str)]
        self.protocol_version = self.protocol_version or (known[0] if known else None)

    @property
    def unanswered(self) -> int:
        """Tool calls sent and not (yet) answered."""
        with self._lock:
            return sum(1 for method, _ in self._pending.values() if method == "tools/call")

    def new_rows(self) -> list[dict[str, Any]]:
        """AgentWorldBench rows for the turns answered since the last call, oldest first.

        Row *k* holds turns 1…k (its ``prompt``/``response`` end at its own turn) and the session's
        ``meta`` as of that turn, with ``incremental: true``; ``total_turns`` is left out because
        the session may go on. So each row is a whole sample on its own, a file cut anywhere
        between rows loses no answered call, and the last row of a session describes all of it.
        """
        with self._lock:
            if self._written == len(self.turns):
                return []
            tid = self._trajectory_id()
            system = self.layout.system_prompt(self.tools)
            rows = []
            for k in range(self._written + 1, len(self.turns) + 1):
                turns = self.turns[:k]
                rows.append({"task": self.layout.task, "id": f"{tid}-t{k}",
                             "prompt": [t.action for t in turns],
                             "response": [t.observation for t in turns], "system_str": system,
                             "turn_idx": k, "meta": {**self._meta(turns), "incremental": True}})
            self._written = len(self.turns)
            return rows

    def trajectory(self) -> Trajectory | None:
        """The session so far as a trajectory, or ``None`` when no tool call was answered."""
        with self._lock:
            if not self.turns:
                return None
            task = self.layout.task
            return Trajectory(id=self._trajectory_id(), domain=task, task=task,
                              system_prompt=self.layout.system_prompt(self.tools), turns=tuple(self.turns),
                              meta=self._meta(self.turns))

    def _trajectory_id(self) -> str:
        """``<name or server name>-<start time>-<random>``, fixed when first needed."""
        if self.trajectory_id is None:
            prefix = self.name or str((self.server_info or {}).get("name") or self.layout.task)
            stamp = datetime.fromisoformat(self.started[0]).strftime("%Y%m%dT%H%M%S")
            self.trajectory_id = f"{prefix}-{stamp}-{uuid.uuid4().hex[:8]}"
        return self.trajectory_id

    def _meta(self, turns: list[Turn]) -> dict[str, Any]:
        return {"source": "real", "recorder": "agentworld record mcp", **self.meta,
                "server": dict(self.server_info or {}), "protocol_version": self.protocol_version,
                "started_at": self.started[0], "recorded_at": clock()[0],
                "elapsed_s": round(time.monotonic() - self.started[1], 3), "calls": len(turns),
                "unanswered": self.unanswered, "turns": [t.meta for t in turns]}


def _id_key(message: dict[str, Any]) -> str | None:
    """A hashable form of a JSON-RPC id that keeps ``1`` and ``"1"`` apart."""
    if "id" not in message or message["id"] is None:
        return None
    return json.dumps(message["id"])


def _turn(layout: RowLayout, call: _Call, response: dict[str, Any], received: tuple[str, float]) -> Turn:
    observation, is_error = observation_of(response)
    meta = {"tool": call.name, "latency_s": round(received[1] - call.sent[1], 4), "is_error": is_error,
            "sent_at": call.sent[0], "received_at": received[0]}
    return Turn(action=layout.action(call.name, call.arguments), observation=observation, meta=meta)


def log(text: str) -> None:
    """Report on stderr: on stdio, stdout carries the protocol and nothing else."""
    print(f"agentworld: {text}", file=sys.stderr, flush=True)


class TrajectorySink:
    """Appends each answered tool call to the output journal as it happens (any thread).

    Durability: the transports call :meth:`flush` *before* relaying a message that answers a tool
    call, so a killed proxy has written (to the OS) every answer its client has seen. A background
    thread fsyncs what was written, so neither the client nor the next message waits on the disk,
    and a lost machine loses at most the calls answered in the last few milliseconds. That thread
    starts with the first row, so none runs while the stdio server is forked (a ``preexec_fn``
    must not meet a lock that another thread held at the fork).
    """

    def __init__(self, out: str | Path) -> None:
        self.journal = JsonlJournal(out)
        self._lock = threading.Lock()
        self._closed = False
        self._written = threading.Event()
        self._syncer: threading.Thread | None = None

    def flush(self, recorder: SessionRecorder) -> None:
        """Write the rows of the session's newly answered calls to the OS (none once closed)."""
        with self._lock:
            if self._closed:
                return
            for row in recorder.new_rows():
                self.journal.append(row, sync=False)
                self._written.set()
            if self._syncer is None and self._written.is_set():
                self._syncer = threading.Thread(target=self._sync_loop, name="record-mcp-fsync", daemon=True)
                self._syncer.start()

    def _sync_loop(self) -> None:
        while True:
            self._written.wait()
            self._written.clear()
            if self._closed:
                return
            self.journal.sync()  # no lock: appends go on meanwhile; close() waits for this thread

    def finish(self, recorder: SessionRecorder) -> None:
        """The session ended: append what is left and say what was recorded."""
        self.flush(recorder)
        unanswered = f" ({recorder.unanswered} unanswered)" if recorder.unanswered else ""
        if recorder.turns:
            log(f"recorded {len(recorder.turns)} tool call(s){unanswered} as {recorder.trajectory_id}"
                f" → {self.journal.path}")
        else:
            log(f"session ended without answered tool calls{unanswered}; nothing recorded")

    def close(self) -> None:
        """Stop writing, fsync what was written and close the file."""
        with self._lock:
            self._closed = True
        self._written.set()
        if self._syncer is not None:
            self._syncer.join()
        self.journal.sync()
        self.journal.close()

"""The ``openai-chat`` converter: chat-completions logs (tool calls and their answers) as trajectories.

Registered on import; :mod:`agentworld.data.ingest` imports this module at its end, so the format is
there wherever ingest is (worker processes included). ``read`` takes a record ``source``, so the
scale-out can give it a shard's byte range.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from agentworld.data import ingest
from agentworld.data.ingest import IngestReport, OnError, RecordSource, register_converter, skip_or_raise
from agentworld.domains import TOOLS_DOMAIN
from agentworld.errors import DataError
from agentworld.io import dumps
from agentworld.schema import OBSERVATION_MARKER, Trajectory, Turn


@register_converter("openai-chat")
class OpenAIChatConverter:
    """Chat-completions logs: items that are message lists or objects with ``messages``/``traj``.

    System messages make the system prompt; each assistant ``tool_calls`` entry is an action
    (compact ``{"tool_name", "arguments"}`` JSON), answered by the ``tool`` message with its
    ``tool_call_id`` (the observation). User/assistant text is context, kept in the next turn's
    ``meta["context_before"]`` (after the last turn: ``Trajectory.meta["context_after"]``).
    Other item keys (``task_id``, ``trial``, ``reward``, ...) go to ``Trajectory.meta``.
    """

    def __init__(self, domain: str = TOOLS_DOMAIN) -> None:
        self.domain = domain

    @staticmethod
    def sniff(record: Any) -> bool:
        return isinstance(record, list) or (isinstance(record, dict)
                                            and ("messages" in record or "traj" in record))

    def read(self, path: Path, *, on_error: OnError = "raise", report: IngestReport | None = None,
             source: RecordSource | None = None) -> Iterator[Trajectory]:
        for line, index, item in ingest.records(path, on_error, report, source):
            if not isinstance(item, list | dict):
                where = f"item {index + 1}: " if line is None else ""
                err = DataError(f"{where}expected a message list or an object with 'messages', got "
                                f"{type(item).__name__}", path=str(path), line=line)
                skip_or_raise(err, on_error, report)
                continue
            extra = {k: v for k, v in item.items() if k not in ("messages", "traj")} \
                if isinstance(item, dict) else {}
            tid = _chat_id(extra, path, index)
            messages = item if isinstance(item, list) else item.get("messages", item.get("traj"))
            try:
                system, turns, meta = _chat_turns(messages)
            except (DataError, TypeError, KeyError, AttributeError) as exc:
                err = exc if isinstance(exc, DataError) else DataError(f"bad message: {exc!r}")
                where = f"item {index + 1}: " if line is None else ""
                skip_or_raise(DataError(where + err.message, path=str(path), line=line, sample_id=tid,
                                        field=err.field), on_error, report)
                continue
            yield Trajectory(id=tid, domain=self.domain, system_prompt=system, turns=turns,
                             meta={"source": str(path), **extra, **meta})


def _chat_id(extra: dict[str, Any], path: Path, index: int) -> str:
    if "task_id" in extra:
        return f"{extra['task_id']}-{extra['trial']}" if "trial" in extra else str(extra["task_id"])
    return str(extra["id"]) if "id" in extra else f"{path.stem}-{index + 1}"


def _text(content: Any) -> str:
    """Message content: a string, null, or a list of parts (their ``text`` joined)."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _action(call: dict[str, Any], field: str) -> tuple[str, str]:
    fn = call["function"]
    args = fn.get("arguments") or {}
    if isinstance(args, str):
        try:
            args = orjson.loads(args)
        except orjson.JSONDecodeError as exc:
            raise DataError(f"arguments are not JSON: {exc}", field=f"{field}.function.arguments") from None
    text = dumps({"tool_name": fn["name"], "arguments": args})
    return fn["name"], f"**Action:**\n```json\n{text}\n```"


def _chat_turns(messages: Any) -> tuple[str, tuple[Turn, ...], dict[str, Any]]:
    if not isinstance(messages, list):
        raise DataError("expected a list of messages", field="messages")
    system: list[str] = []
    context: list[dict[str, str]] = []
    pending: dict[str, tuple[str, str, list[dict[str, str]]]] = {}
    turns: list[Turn] = []
    for j, msg in enumerate(messages):
        role, text = msg["role"], _text(msg.get("content"))
        if role in ("system", "developer"):
            system.append(text)
        elif role == "tool":
            call_id = msg.get("tool_call_id")
            if call_id not in pending:
                raise DataError(f"no tool call with id {call_id!r} before it",
                                field=f"messages[{j}].tool_call_id")
            name, action, before = pending.pop(call_id)
            turns.append(Turn(action=action, observation=f"{OBSERVATION_MARKER}\n{text}",
                              meta={"context_before": before, "tool_call_id": call_id, "tool_name": name}))
        elif role in ("user", "assistant"):
            if text:
                context.append({"role": role, "content": text})
            for k, call in enumerate(msg.get("tool_calls") or []):
                name, action = _action(call, f"messages[{j}].tool_calls[{k}]")
                pending[call["id"]] = (name, action, context)
                context = []
        else:
            raise DataError(f"unknown role {role!r}", field=f"messages[{j}].role")
    meta: dict[str, Any] = {"context_after": context} if context else {}
    if pending:
        meta["unanswered_tool_calls"] = [name for name, _, _ in pending.values()]
    return "\n\n".join(system), tuple(turns), meta

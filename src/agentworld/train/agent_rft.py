"""Rejection-sampling fine-tuning of a small tool-using agent, in whatever environment it is given.

Why: the paper's Paradigm I trains agents against the world model instead of real sandboxes. Whether
that transfers is measured by training the same agent, with the same budget and seeds, in different
environments — real servers, a simulator of them, synthesized worlds — and scoring every arm on real
held-out tasks. This module is the part all arms share, so the only difference between arms is the
environment: an episode loop over any :class:`TaskEnv` (one JSON tool call per agent turn, ``{"done": true}``
ends), sampling K episodes per task and keeping those the environment's own check passes, and a
plain supervised update on the kept episodes' agent turns (the loss on the agent's tokens only).

The agent is a chat model behind any :class:`~agentworld.models.base.ChatBackend` (the in-process
llama.cpp backend for speed); the update runs in transformers and writes a GGUF the next round (or
the evaluation) samples from.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agentworld.domains.actions import tool_call
from agentworld.models.base import ChatBackend, ChatRequest
from agentworld.schema import Message

AGENT_SYSTEM = (
    "You are an agent that completes the user's task by calling tools. Tools:\n{tools}\n\n"
    'Reply with exactly one tool call as JSON, like {{"name": "<tool>", "arguments": {{...}}}}. '
    'After each call you see its result. When the task is done, reply {{"done": true}}.')
DONE = '{"done": true}'
_SCHEMA_KEYS = frozenset({"type", "properties", "required", "items", "enum"})
MAX_RESULT_CHARS = 600


class TaskEnv(Protocol):
    """One task in one environment: what the agent is told, where its calls go, and the task's check."""

    instruction: str
    tools: list[dict[str, Any]]

    async def call(self, name: str, arguments: dict[str, Any]) -> str: ...

    async def finish(self) -> tuple[bool, list[str]]: ...


def _plain(schema: Any) -> Any:
    """A tool's input schema reduced to what a decoding grammar needs (types, properties, items, enums)."""
    if not isinstance(schema, dict):
        return {}
    out = {k: v for k, v in schema.items() if k in _SCHEMA_KEYS and k not in ("properties", "items")}
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: _plain(v) for k, v in schema["properties"].items()}
    if isinstance(schema.get("items"), dict):
        out["items"] = _plain(schema["items"])
    return out


def call_schema(tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The JSON schema of one agent turn: a call of one of ``tools`` with its arguments, or ``DONE``.

    Why: a 135M model asked for JSON mostly writes prose or code; decoding under this schema (a
    grammar, the way function-calling modes of serving stacks work) makes every turn an action, so
    what training changes is which action, not whether there is one.
    """
    calls = [{"type": "object",
              "properties": {"name": {"enum": [tool["name"]]},
                             "arguments": _plain(tool.get("inputSchema")) or {"type": "object"}},
              "required": ["name", "arguments"]} for tool in tools]
    done = {"type": "object", "properties": {"done": {"enum": [True]}}, "required": ["done"]}
    return {"anyOf": [*calls, done]}


def _words(text: str) -> set[str]:
    import re

    return {w[:5] for w in re.findall(r"[a-z]+", text.lower().replace("_", " ")) if len(w) > 2}


def relevant_tools(tools: Sequence[dict[str, Any]], instruction: str, k: int) -> list[dict[str, Any]]:
    """The ``k`` tools whose name and description share the most (rare) words with the instruction.

    Why: tool retrieval, as agent harnesses do for long tool lists. A 135M model shown a server's 14
    tools picks among them almost at random; shown the few that match the task, its choice is a
    question it can answer. Word stems (first five letters) weighted by how few tools use them.
    """
    import math

    if k <= 0 or len(tools) <= k:
        return list(tools)
    bags = [_words(f"{t['name']} {t['name']} {t.get('description', '')}") for t in tools]
    want = _words(instruction)
    df = {w: sum(w in bag for bag in bags) for w in want}
    scores = [sum(math.log((1 + len(tools)) / (1 + df[w])) for w in want & bag) for bag in bags]
    order = sorted(range(len(tools)), key=lambda i: (-scores[i], i))[:k]
    return [tools[i] for i in sorted(order)]


def tools_brief(tools: Sequence[dict[str, Any]]) -> str:
    """One line a tool: ``name(arg: type, arg?: type) — description`` (``?``: optional)."""
    lines = []
    for tool in tools:
        schema = tool.get("inputSchema") or {}
        required = set(schema.get("required") or [])
        args = ", ".join(f"{name}{'' if name in required else '?'}: {spec.get('type', 'any')}"
                         for name, spec in (schema.get("properties") or {}).items() if isinstance(spec, dict))
        about = " ".join(str(tool.get("description", "")).split())[:100]
        lines.append(f"- {tool['name']}({args}) — {about}")
    return "\n".join(lines)


@dataclass
class Episode:
    """One agent episode: the conversation, the calls made, and whether the task's check passed."""

    task: str
    messages: list[Message]
    calls: list[dict[str, Any]] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    passed: bool = False
    reasons: list[str] = field(default_factory=list)
    env_s: float = 0.0
    """Seconds spent inside the environment (tool calls and the final check)."""


async def run_episode(agent: ChatBackend, env: TaskEnv, *, task: str, max_steps: int = 5,
                      temperature: float = 0.0, seed: int = 0, max_tokens: int = 128,
                      constrained: bool = False, tool_choices: int = 0) -> Episode:
    """Let ``agent`` act in ``env`` until it says it is done, answers without a tool call, or runs out of
    steps; ``constrained``: decode every turn under :func:`call_schema` (backends that support it);
    ``tool_choices``: show only that many tools (:func:`relevant_tools`; 0: all)."""
    shown = relevant_tools(env.tools, env.instruction, tool_choices)
    messages = [Message(role="system", content=AGENT_SYSTEM.format(tools=tools_brief(shown))),
                Message(role="user", content=env.instruction)]
    episode = Episode(task=task, messages=messages)
    for step in range(max_steps):
        extra = {"json_schema": call_schema(shown)} if constrained else {}
        request = ChatRequest(messages=tuple(messages), max_tokens=max_tokens, temperature=temperature,
                              seed=seed * 1000 + step, extra=extra)
        reply = (await agent.complete(request)).content.strip()
        call = tool_call(reply)
        if call is None:
            messages.append(Message(role="assistant", content=reply[:200] or DONE))
            break
        name, arguments = call
        action = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
        messages.append(Message(role="assistant", content=action))
        started = time.perf_counter()
        try:
            result = await env.call(name, arguments)
        except Exception as exc:  # a call the environment refused is the agent's mistake, not a crash
            result = f"Error: {type(exc).__name__}: {exc}"
        episode.env_s += time.perf_counter() - started
        episode.calls.append({"tool": name, "arguments": arguments})
        episode.observations.append(result)
        messages.append(Message(role="user", content=f"Result:\n{result[:MAX_RESULT_CHARS]}"))
    started = time.perf_counter()
    episode.passed, episode.reasons = await env.finish()
    episode.env_s += time.perf_counter() - started
    return episode


def sft_examples(episodes: Sequence[Episode]) -> list[list[Message]]:
    """The passed episodes' conversations (each ending with the agent's :data:`DONE`), one per distinct
    call sequence of a task."""
    seen: set[str] = set()
    out = []
    for episode in episodes:
        key = json.dumps([episode.task, episode.calls], sort_keys=True)
        if not episode.passed or key in seen:
            continue
        seen.add(key)
        messages = list(episode.messages)
        if messages[-1].role != "assistant":
            messages.append(Message(role="assistant", content=DONE))
        out.append(messages)
    return out


@dataclass(frozen=True)
class UpdateSettings:
    """The supervised update of one round (the same for every arm: the budget is in steps)."""

    steps: int = 48
    learning_rate: float = 5e-5
    seed: int = 0


def supervised_update(base: str | Path, examples: Sequence[list[Message]], out: Path,
                      settings: UpdateSettings, *, quant: str = "q8_0", layout: str = "smollm2",
                      keep_weights: bool = False) -> tuple[Path, dict[str, Any]]:
    """Fine-tune ``base`` (a GGUF file, an alias, or a folder this wrote) on ``examples`` (loss on
    assistant turns only) and write ``out`` (GGUF laid out as ``layout``).

    With no examples the base model is written unchanged: an arm that kept nothing learned nothing.
    ``keep_weights``: also save the float32 weights in ``out`` without its suffix (a folder), so a
    later update continues from them rather than from a re-read of the quantized file.
    Returns the GGUF path and what the update did (steps, loss first/last, seconds).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from agentworld.models.packaged import as_plain_weights, hf_source
    from agentworld.train.export import write_gguf

    started = time.perf_counter()
    source, options = hf_source(str(base))
    tokenizer = AutoTokenizer.from_pretrained(source, **options)
    model: Any = as_plain_weights(AutoModelForCausalLM.from_pretrained(source, **options))
    torch.manual_seed(settings.seed)
    stats: dict[str, Any] = {"examples": len(examples), "steps": 0, "loss_first": None, "loss_last": None}
    if examples:
        batches = [_tokenized(tokenizer, ex) for ex in examples]
        optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate)
        order = random.Random(settings.seed)
        model.train()
        for step in range(settings.steps):
            ids, labels = batches[order.randrange(len(batches))] if step >= len(batches) else batches[step]
            loss = model(input_ids=ids, labels=labels).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
            value = float(loss.detach())
            stats["loss_first"] = value if stats["loss_first"] is None else stats["loss_first"]
            stats["loss_last"] = value
            stats["steps"] = step + 1
        model.eval()
    out.parent.mkdir(parents=True, exist_ok=True)
    write_gguf(model, layout, out, quant)
    if keep_weights:
        model.save_pretrained(out.with_suffix(""))
        tokenizer.save_pretrained(out.with_suffix(""))
    stats["seconds"] = round(time.perf_counter() - started, 1)
    return out, stats


def _tokenized(tokenizer: Any, messages: list[Message]) -> tuple[Any, Any]:
    """Input ids of the whole conversation and labels that keep only the assistant turns' tokens."""
    import torch

    ids: list[int] = []
    labels: list[int] = []
    for i in range(len(messages)):
        turns = [{"role": m.role, "content": m.content} for m in messages[:i + 1]]
        text = tokenizer.apply_chat_template(turns, tokenize=False)
        full = tokenizer(text, add_special_tokens=False)["input_ids"]
        new = full[len(ids):]
        ids.extend(new)
        labels.extend(new if messages[i].role == "assistant" else [-100] * len(new))
    return torch.tensor([ids]), torch.tensor([labels])

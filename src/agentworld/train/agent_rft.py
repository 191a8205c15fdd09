"""Rejection-sampling fine-tuning of a small tool-using agent, in whatever environment it is given.

Why: the paper's Paradigm I trains agents against the world model instead of real sandboxes. Whether
that transfers is measured by training the same agent, with the same budget and seeds, in different
environments — real servers, a simulator of them, synthesized worlds — and scoring every arm on real
held-out tasks. This module is the part all arms share, so the only difference between arms is the
environment: an episode loop over any :class:`TaskEnv` (one JSON tool call per agent turn, ``DONE``
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
    "After each call you see its result. When the task is done, reply DONE.")
MAX_RESULT_CHARS = 600


class TaskEnv(Protocol):
    """One task in one environment: what the agent is told, where its calls go, and the task's check."""

    instruction: str
    tools: list[dict[str, Any]]

    async def call(self, name: str, arguments: dict[str, Any]) -> str: ...

    async def finish(self) -> tuple[bool, list[str]]: ...


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
                      temperature: float = 0.0, seed: int = 0, max_tokens: int = 128) -> Episode:
    """Let ``agent`` act in ``env`` until it says DONE, answers without a tool call, or runs out of steps."""
    messages = [Message(role="system", content=AGENT_SYSTEM.format(tools=tools_brief(env.tools))),
                Message(role="user", content=env.instruction)]
    episode = Episode(task=task, messages=messages)
    for step in range(max_steps):
        request = ChatRequest(messages=tuple(messages), max_tokens=max_tokens, temperature=temperature,
                              seed=seed * 1000 + step)
        reply = (await agent.complete(request)).content.strip()
        call = tool_call(reply)
        if call is None:
            messages.append(Message(role="assistant", content=reply[:200] or "DONE"))
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
    """The passed episodes' conversations (each ending with the agent's DONE), one per distinct call
    sequence of a task."""
    seen: set[str] = set()
    out = []
    for episode in episodes:
        key = json.dumps([episode.task, episode.calls], sort_keys=True)
        if not episode.passed or key in seen:
            continue
        seen.add(key)
        messages = list(episode.messages)
        if messages[-1].role != "assistant":
            messages.append(Message(role="assistant", content="DONE"))
        out.append(messages)
    return out


@dataclass(frozen=True)
class UpdateSettings:
    """The supervised update of one round (the same for every arm: the budget is in steps)."""

    steps: int = 48
    learning_rate: float = 5e-5
    seed: int = 0


def supervised_update(base: str, examples: Sequence[list[Message]], out: Path, settings: UpdateSettings,
                      *, quant: str = "q8_0") -> tuple[Path, dict[str, Any]]:
    """Fine-tune ``base`` on ``examples`` (loss on assistant turns only) and write ``out`` (GGUF).

    With no examples the base model is written unchanged: an arm that kept nothing learned nothing.
    Returns the GGUF path and what the update did (steps, loss first/last, seconds).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from agentworld.models.packaged import as_plain_weights, hf_source
    from agentworld.train.export import write_gguf

    started = time.perf_counter()
    source, options = hf_source(base)
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
    write_gguf(model, base, out, quant)
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

"""One Sim RL episode as verl's agent loops return it: token ids, a response mask, reward and extras.

This module does not import verl, so the token bookkeeping is usable and tested without it;
:mod:`agentworld.train.verl_loop` wraps it in verl's ``AgentLoopBase``. The episode itself is
:func:`agentworld.train.rollout.arun_episode` (the same prompts, action parsing, turn limit and
rewards as ``train rollout``), driven by an agent whose replies are generated token by token by
verl's rollout server. Why that split: the policy is trained only on the tokens it generated, so
every generated token is recorded as it came (mask 1, with its log-prob) and every token the
simulator contributed (an observation wrapped in the chat template's user turn) is masked out (0).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentworld.errors import DataError
from agentworld.models.base import ChatRequest, ChatResult
from agentworld.sim.agent import DONE
from agentworld.sim.types import SessionState, WorldSpec
from agentworld.train.rollout import arun_episode
from agentworld.train.sweep import SweepTask, TaskCheck, load_world_tasks

AGENT_NAME = "agentworld"
"""verl's ``agent_name`` of the loop, and the dataset field naming a row's world."""

Generate = Callable[[list[int], dict[str, Any]], Awaitable[tuple[list[int], list[float] | None]]]
"""``(context token ids, sampling params) -> (generated token ids, their log-probs or None)``."""

_REPLY = "AGENTWORLD_REPLY"
_PREFIX = ({"role": "user", "content": "x"}, {"role": "assistant", "content": _REPLY})
"""A conversation ending in an assistant turn: the template's text after it is one observation's."""


@dataclass(frozen=True)
class VerlEpisode:
    """The fields of verl's ``AgentLoopOutput`` for one episode (``metrics`` aside)."""

    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    """1 for a token the policy generated, 0 for a token of a simulator observation."""
    response_logprobs: list[float] | None
    reward_score: float
    num_turns: int
    """Chat messages after the system prompt (agent replies and observations), plus one, as verl counts."""
    extra_fields: dict[str, Any] = field(default_factory=dict)


class TokenAgent:
    """A :class:`~agentworld.models.base.ChatBackend` whose replies are generated as token ids.

    It keeps the token sequence of the whole episode: the first request's messages become the
    prompt; each later request adds the messages since the agent's last reply (the observation)
    rendered by the chat template (mask 0), then the generated tokens (mask 1). Once
    ``response_length`` tokens are used it stops generating and answers ``DONE`` (``exhausted``).
    """

    name = "verl"

    def __init__(self, generate: Generate, tokenizer: Any, sampling_params: dict[str, Any], *,
                 response_length: int, chat_template_kwargs: dict[str, Any] | None = None) -> None:
        self._generate = generate
        self._tokenizer = tokenizer
        self._sampling = dict(sampling_params)
        self._template_kwargs = dict(chat_template_kwargs or {})
        self.response_length = response_length
        self.prompt_ids: list[int] = []
        self.response_ids: list[int] = []
        self.response_mask: list[int] = []
        self.logprobs: list[float] = []
        self.has_logprobs = True
        self.exhausted = False
        self._seen = 0
        self._last_text = ""

    def _render(self, messages: Sequence[dict[str, Any]], generation_prompt: bool) -> str:
        text = self._tokenizer.apply_chat_template(list(messages), tokenize=False,
                                                   add_generation_prompt=generation_prompt,
                                                   **self._template_kwargs)
        return str(text)

    def _encode(self, text: str) -> list[int]:
        return list(self._tokenizer.encode(text, add_special_tokens=False))

    def observation_ids(self, messages: Sequence[dict[str, Any]]) -> list[int]:
        """Token ids the template adds for ``messages`` after an assistant turn, up to the next reply.

        The template closes the assistant turn (ChatML: ``<|im_end|>`` and a newline); the part of
        that closing the policy did not generate itself (the newline after its end-of-turn token, or
        all of it when generation stopped on length) comes first, so the sequence reads as the
        template renders the conversation.
        """
        before = self._render(_PREFIX, False)
        after = self._render([*_PREFIX, *messages], True)
        if not after.startswith(before) or _REPLY not in before:
            raise ValueError("the chat template renders a conversation differently once a message is added; "
                             "cannot split an observation's tokens from the history")
        closing = before[before.rindex(_REPLY) + len(_REPLY):]
        done = next(k for k in range(len(closing), -1, -1) if self._last_text.endswith(closing[:k]))
        return self._encode(closing[done:] + after[len(before):])

    def _append(self, ids: Sequence[int], mask: int, logprobs: Sequence[float] | None = None) -> None:
        ids = list(ids)[:self.response_length - len(self.response_mask)]
        self.response_ids += ids
        self.response_mask += [mask] * len(ids)
        if logprobs is None or len(logprobs) < len(ids):
            self.has_logprobs = self.has_logprobs and mask == 0
            self.logprobs += [0.0] * len(ids)
        else:
            self.logprobs += list(logprobs[:len(ids)])

    async def complete(self, request: ChatRequest) -> ChatResult:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        if not self.prompt_ids and not self.response_ids:
            self.prompt_ids = self._encode(self._render(messages, True))
        else:
            self._append(self.observation_ids(messages[self._seen + 1:]), 0)
        self._seen = len(messages)
        if len(self.response_mask) >= self.response_length:
            self.exhausted = True
            return ChatResult(content=DONE, finish_reason="length", source="verl")
        ids, logprobs = await self._generate(self.prompt_ids + self.response_ids, self._sampling)
        self._append(ids, 1, logprobs)
        self._last_text = str(self._tokenizer.decode(ids, skip_special_tokens=False))
        text = self._tokenizer.decode(ids, skip_special_tokens=True)
        return ChatResult(content=str(text), source="verl")


async def run_verl_episode(generate: Generate, tokenizer: Any, world_model: Any, spec: WorldSpec, *,
                           task: str, seed: int, max_turns: int, response_length: int,
                           sampling_params: dict[str, Any] | None = None,
                           check: TaskCheck | None = None,
                           chat_template_kwargs: dict[str, Any] | None = None) -> VerlEpisode:
    """Run one simulator episode with the policy behind ``generate``; return verl's output fields.

    ``extra_fields`` carry what the simulator knows about the episode: each turn's observation
    ``sources`` (world model, cache, real, agent_error) and injected ``faults`` (kind or None),
    ``errors`` (turns whose observation was an error), the final ``ledger`` summary, ``done`` (the
    agent said DONE), ``truncated`` (turn limit or token budget), ``success`` and
    ``failed_conditions`` (the task's ``check``, when given; then the reward is 1.0 on success, else
    0.0, plus any per-step rewards) and the ``trajectory`` in the unified schema.
    """
    agent = TokenAgent(generate, tokenizer, sampling_params or {}, response_length=response_length,
                       chat_template_kwargs=chat_template_kwargs)
    final: list[SessionState] = []
    verdicts: list[tuple[bool, list[str]]] = []

    def reward(state: SessionState) -> float:
        final.append(state)
        if check is None:
            return 0.0
        verdicts.append(check(state))
        return 1.0 if verdicts[-1][0] else 0.0

    episode = await arun_episode(agent, world_model, spec, index=0, seed=seed, fault_rate=0.0,
                                 max_turns=max_turns, task=task, task_reward=reward)
    turns = episode.trajectory.turns
    state = final[-1] if final else None
    done = episode.done and not agent.exhausted
    extra = {"sources": [t.meta.get("source") for t in turns], "faults": [t.meta.get("fault") for t in turns],
             "errors": sum(bool(t.meta.get("is_error")) for t in turns),
             "ledger": state.ledger if state is not None else "", "done": done,
             "truncated": episode.truncated or agent.exhausted,
             "success": verdicts[-1][0] if verdicts else None,
             "failed_conditions": list(verdicts[-1][1]) if verdicts else [],
             "trajectory": episode.trajectory.model_dump(mode="json")}
    logprobs = agent.logprobs if agent.has_logprobs and agent.response_ids else None
    return VerlEpisode(prompt_ids=agent.prompt_ids, response_ids=agent.response_ids,
                       response_mask=agent.response_mask, response_logprobs=logprobs,
                       reward_score=float(episode.reward),
                       num_turns=len(episode.completions) + len(turns) + 1, extra_fields=extra)


@lru_cache(maxsize=64)
def _world(folder: str) -> tuple[WorldSpec, dict[str, SweepTask]]:
    _, spec, tasks = load_world_tasks(folder)
    return spec, {task.id: task for task in tasks}


def row_world(row: dict[str, Any]) -> tuple[WorldSpec, str, int, TaskCheck | None, str]:
    """The spec, task text, seed, success check and task id a dataset row names.

    Raises:
        DataError: the row has no ``agentworld`` field, or names an unknown task of its world.
    """
    raw = row.get(AGENT_NAME)
    if raw is None:
        raw = (row.get("extra_info") or {}).get(AGENT_NAME)
    if raw is None:
        raise DataError(f"the row has no {AGENT_NAME!r} field (nor extra_info[{AGENT_NAME!r}]) naming its "
                        "world", field=AGENT_NAME)
    info: dict[str, Any] = json.loads(raw) if isinstance(raw, str) else dict(raw)
    seed = int(info.get("seed") or 0)
    task, task_id, check = str(info.get("task") or ""), str(info.get("task_id") or ""), None
    if info.get("world"):
        spec, tasks = _world(str(Path(str(info["world"]))))
        if task_id:
            if task_id not in tasks:
                known = ", ".join(sorted(tasks)) or "none"
                raise DataError(f"no task {task_id!r} in the world (tasks: {known})", path=str(info["world"]),
                                field="task_id")
            task, check = task or tasks[task_id].instruction, tasks[task_id].check
    else:
        value = info.get("spec") or {}
        spec = (WorldSpec.model_validate_json(value) if isinstance(value, str)
                else WorldSpec.model_validate(value))
    if not task:
        users = [m for m in row.get("raw_prompt") or [] if isinstance(m, dict) and m.get("role") == "user"]
        task = str(users[-1].get("content") or "") if users else ""
    return spec, task, seed, check, task_id

"""The agent's side of a simulated episode: its system prompt and the parser of its replies.

Why here (``sim``): every consumer of an agent acting in a simulator — Sim RL rollouts (``train``), the
closed-loop and agent-prediction evaluations (``eval``) and the planner (``plan``) — prompts the agent and
reads its action the same way, so the prompt and parser sit in the layer they all build on.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentworld.domains.hooks import domain_actions
from agentworld.models.parsing import remove_thinking
from agentworld.sim.history import ActionError
from agentworld.sim.types import WorldSpec

__all__ = ["AGENT_PROMPT", "DONE", "agent_system_prompt", "parse_agent_action"]

DONE = "DONE"

AGENT_PROMPT = """You are an agent acting in an environment to complete a task.
Task: {task}

{action_help}
Reply with exactly one action as a JSON value (you may think first, but end with the JSON).
When the task is complete, reply with {done} instead."""


def _json_values(text: str) -> list[Any]:
    """Every JSON value found in fences or as balanced ``{...}``/``[...]`` spans, in order."""
    found: list[Any] = []
    spans = [m.group(1) for m in re.finditer(r"```(?:json)?\s*(.*?)```", text, re.S | re.I)]
    stack: list[str] = []
    start = -1
    for i, ch in enumerate(text):
        if ch in "{[":
            if not stack:
                start = i
            stack.append(ch)
        elif ch in "}]" and stack:
            stack.pop()
            if not stack:
                spans.append(text[start:i + 1])
    for span in spans:
        try:
            found.append(json.loads(span))
        except ValueError:
            continue
    return found


def parse_agent_action(reply: str, domain: str) -> dict[str, Any] | list[Any] | None:
    """The action in an agent reply (the last JSON value of the right shape), or ``None`` for ``DONE``.

    Raises:
        ActionError: the reply holds no action of the domain's shape.
    """
    text = remove_thinking(reply or "")
    actions = domain_actions(domain)
    for value in reversed(_json_values(text)):
        action = actions.agent_action(value)
        if action is not None:
            return action
    if text.strip().upper().endswith(DONE):
        return None
    raise ActionError(f"no {domain} action found in the reply: end it with one JSON action, or {DONE}")


def agent_system_prompt(spec: WorldSpec, task: str) -> str:
    """The agent's system prompt: task and the domain's action format (MCP: with the tool list)."""
    help_text = domain_actions(spec.domain).agent_help(spec)
    return AGENT_PROMPT.format(task=task or "explore the environment", action_help=help_text, done=DONE)

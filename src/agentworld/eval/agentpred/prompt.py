"""What the agent is shown and how its prediction is read back (``eval agent-predictions``).

Why one request per step, holding both the action and the prediction: it is the predict-before-acting
setting itself (Paradigm II) — the agent states what its own action will show in the same reply that
commits to it, so the prediction cannot be tuned to an action it did not choose, and each step costs
one request. With fixed actions the user message names the action to take and the agent only
predicts. The conversation is the agent's own: its replies, then the real observation, so later
predictions can use everything the real environment has shown.

Every user message uses the same labelled sections (:data:`OBSERVATION`, :data:`SETUP`,
:data:`NEXT_ACTION`), so a scripted agent can read the history back with :func:`read_history`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentworld.schema import Message

OPEN, CLOSE = "<predicted_observation>", "</predicted_observation>"
DONE = "DONE"
OBSERVATION = "### Observation"
SETUP = "### Setup action (already run)"
NEXT_ACTION = "### Next action"
_PREDICTION_RE = re.compile(re.escape(OPEN) + r"\n?(.*?)\n?" + re.escape(CLOSE), re.S)
_SECTION_RE = re.compile(r"^(### [^\n]+)\n(.*?)(?=\n\n### |\Z)", re.S | re.M)

_FIXED = """Each message shows what the environment showed last and the action that runs next. \
Predict, exactly, the observation that action will produce, and answer with it inside \
{open}...{close}."""
_CHOSEN = """Task: {goal}
{action_help}
Each message shows what the environment showed last. Reply with your next action as one JSON value, \
then the observation you expect it to produce, exactly, inside {open}...{close}. When the task is \
complete, reply with {done} instead."""
SYSTEM = """You act in a real {display} environment. Before each action runs you predict what it will \
show; the action then runs for real and you see the real observation.
{mode}"""


def system_prompt(display: str, goal: str | None, action_help: str) -> str:
    """The agent's system prompt: fixed actions (``goal`` None) or actions it chooses towards ``goal``."""
    mode = (_FIXED.format(open=OPEN, close=CLOSE) if goal is None else
            _CHOSEN.format(goal=goal, action_help=action_help, open=OPEN, close=CLOSE, done=DONE))
    return SYSTEM.format(display=display, mode=mode)


def first_message(initial: str, setup: Sequence[tuple[str, str]], next_action: str | None) -> str:
    """The first user message: the initial observation, the setup steps and their observations."""
    parts = [f"{OBSERVATION}\n{initial}"]
    for action, observation in setup:
        parts += [f"{SETUP}\n{action}", f"{OBSERVATION}\n{observation}"]
    return _with_action(parts, next_action)


def step_message(observation: str, next_action: str | None) -> str:
    """A later user message: the real observation of the previous action (and the next fixed one)."""
    return _with_action([f"{OBSERVATION}\n{observation}"], next_action)


def _with_action(parts: list[str], next_action: str | None) -> str:
    if next_action is not None:
        parts.append(f"{NEXT_ACTION}\n{next_action}")
    return "\n\n".join(parts)


def read_prediction(reply: str) -> str | None:
    """The text of the reply's last prediction block (None when it has none)."""
    found = _PREDICTION_RE.findall(reply or "")
    return found[-1] if found else None


def without_prediction(reply: str) -> str:
    """The reply with its prediction blocks removed (where the chosen action is looked for)."""
    return _PREDICTION_RE.sub("", reply or "")


def read_history(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """The (label, text) sections of every user message, in order: how a scripted agent follows the
    episode (``### Observation``, ``### Setup action (already run)``, ``### Next action``)."""
    return [(m.group(1), m.group(2)) for message in messages if message.role == "user"
            for m in _SECTION_RE.finditer(message.content)]

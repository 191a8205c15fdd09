"""The optimizer's side: the request that asks for a revised prompt, and the parse of its reply.

The request shows the current prompt and the worst-scored training samples, each as its action and
a unified diff of the expected observation against the prediction, cut to a character budget so a
long observation cannot crowd out the others. The reply must hold the revision inside
``<revised_prompt>…</revised_prompt>``; anything else (no block, an unclosed one, an empty or
oversized one, a copy of an earlier variant) is a failed proposal with its reason, never a crash.
"""

from __future__ import annotations

import difflib
import re

from agentworld.models.base import ChatRequest
from agentworld.models.parsing import remove_thinking
from agentworld.optimize.evaluate import SampleScore
from agentworld.schema import BenchSample, Message, strip_marker

TAG = "revised_prompt"
SYSTEM = (
    "You improve the system prompt of a language world model: a model that, given an agent's "
    "interaction so far and its next action, predicts the environment's next observation. You are shown "
    "the current system prompt and the samples it scored worst on, each with a unified diff from the "
    "expected observation (-) to the model's prediction (+). Revise the prompt so the model makes "
    "fewer such mistakes in general: state rules about the environment's behaviour and the output "
    "format, do not copy the samples' contents into the prompt. Keep what works; keep the output "
    f"contract. Reply with the complete revised prompt inside <{TAG}>...</{TAG}> and nothing else "
    "inside that block.")
_BLOCK = re.compile(rf"<{TAG}>(.*?)</{TAG}>", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"^```[\w-]*\n(.*)\n```$", re.DOTALL)
CUT = "\n… [truncated]"


class ProposalError(ValueError):
    """An optimizer reply that holds no usable revision; the message is the recorded reason."""


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - len(CUT))] + CUT


def sample_diff(expected: str, predicted: str) -> str:
    """Unified diff from the expected observation to the prediction (markers removed)."""
    lines = difflib.unified_diff(strip_marker(expected).strip().splitlines(),
                                 strip_marker(predicted).strip().splitlines(),
                                 "expected", "predicted", lineterm="", n=2)
    return "\n".join(lines) or "(identical)"


def samples_block(worst: list[SampleScore], by_id: dict[str, BenchSample], budget: int) -> str:
    """The worst samples for the request, each within an equal share of ``budget`` characters."""
    share = budget // max(1, len(worst))
    parts = []
    for n, scored in enumerate(worst, 1):
        sample = by_id[scored.id]
        head = f"## Sample {n} (score {scored.score:.1f} of 100)\n"
        action = "### Action\n" + _cut(sample.action, share // 3) + "\n"
        diff = "### Diff (expected -> predicted)\n```diff\n"
        body = sample_diff(sample.ground_truth, scored.prediction or "")
        room = share - len(head) - len(action) - len(diff) - 4
        parts.append(head + action + diff + _cut(body, max(80, room)) + "\n```")
    return "\n\n".join(parts)


def optimizer_request(current: str, worst: list[SampleScore], by_id: dict[str, BenchSample], *,
                      model: str, budget: int, max_tokens: int, temperature: float,
                      history: tuple[str, ...] = ()) -> ChatRequest:
    """The request asking the optimizer to revise ``current`` given its worst samples.

    ``history`` lines tell it how earlier revisions fared on the training split (never on validation,
    which must stay unseen) and which proposals failed, so it does not repeat them.
    """
    earlier = ("# Earlier variants (training-split score, 0-100)\n\n" + "\n".join(history) + "\n\n"
               if history else "")
    user = (f"# Current system prompt\n\n<current_prompt>\n{current}\n</current_prompt>\n\n{earlier}"
            f"# Worst-scored samples\n\n{samples_block(worst, by_id, budget)}\n\n"
            f"Write the complete revised system prompt inside <{TAG}>...</{TAG}>.")
    return ChatRequest(messages=(Message(role="system", content=SYSTEM), Message(role="user", content=user)),
                       model=model, max_tokens=max_tokens, temperature=temperature)


def parse_revision(raw: str, max_chars: int) -> str:
    """The revised prompt of an optimizer reply: the last complete block, thinking and fences removed.

    Raises:
        ProposalError: no block, an unclosed block (a truncated reply), an empty or oversized one.

    >>> parse_revision("<think>hm</think>ok <revised_prompt>\\nBe exact.\\n</revised_prompt>", 100)
    'Be exact.'
    """
    text = remove_thinking(raw or "")
    blocks = _BLOCK.findall(text)
    if not blocks:
        if re.search(rf"<{TAG}>", text, re.IGNORECASE):
            raise ProposalError(f"<{TAG}> is never closed (a truncated reply?)")
        raise ProposalError(f"no <{TAG}> block in the reply")
    revision = blocks[-1].strip()
    fenced = _FENCE.match(revision)
    if fenced:
        revision = fenced.group(1).strip()
    if not revision:
        raise ProposalError(f"the <{TAG}> block is empty")
    if len(revision) > max_chars:
        raise ProposalError(f"the revision has {len(revision)} characters (limit --max-prompt-chars "
                            f"{max_chars})")
    return revision

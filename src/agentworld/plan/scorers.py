"""Scorers of imagined rollouts: a judge (WebDreamer's success / on track / failure) or a task's rules.

Why two: a judge reads any task but costs a model call and can be wrong; a rule check (the
predicted screen must not show an error, must show a string, must be back at the prompt) is exact
and free wherever a task states one. Both give a :class:`~agentworld.plan.records.Verdict` with a
score in [0, 1], so the planner ranks candidates the same way whichever is used.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from agentworld.domains.base import plugin_of
from agentworld.domains.hooks import domain_actions
from agentworld.models.base import ChatBackend, ChatRequest
from agentworld.models.cache import ResponseCache
from agentworld.models.parsing import remove_thinking
from agentworld.plan.records import ImaginedStep, Verdict
from agentworld.schema import Message
from agentworld.sim.types import TurnRecord

__all__ = ["JUDGE_SCORES", "JudgeScorer", "PlanContext", "RuleCheck", "RuleScorer", "Scorer", "parse_verdict"]

JUDGE_SCORES: dict[str, float] = {"success": 1.0, "on track": 0.5, "failure": 0.0}


@dataclass(frozen=True)
class PlanContext:
    """What a scorer (and an agent) knows of the live episode: its task and its real turns so far."""

    domain: str
    task: str = ""
    initial: str = ""
    history: tuple[TurnRecord, ...] = field(default_factory=tuple)


class Scorer(Protocol):
    """Scores one imagined rollout; model calls go through ``cache`` when one is given."""

    @property
    def name(self) -> str: ...

    async def score(self, context: PlanContext, steps: Sequence[ImaginedStep],
                    cache: ResponseCache | None) -> Verdict: ...


class RuleCheck(BaseModel):
    """A task's deterministic success rule on imagined observations.

    Attributes:
        errors: failure patterns (``re.M``) besides the domain's own ``error_patterns``.
        domain_errors: also fail on the domain's error patterns (the data pipeline's, e.g. the
            shells' ``command not found``).
        must_contain: strings some imagined observation must show.
        end_at_prompt: the last imagined observation must end at the domain's input prompt (a
            command that is still running, or waits for input, fails this).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    errors: tuple[str, ...] = ()
    domain_errors: bool = True
    must_contain: tuple[str, ...] = ()
    end_at_prompt: bool = False

    def patterns(self, domain: str) -> list[re.Pattern[str]]:
        shared = plugin_of(domain).error_patterns if self.domain_errors else ()
        return [re.compile(p, re.M) for p in (*shared, *self.errors)]

    def check(self, domain: str, observations: Sequence[str]) -> Verdict:
        """``pass`` (1.0) when every rule holds, else ``fail`` (0.0) naming the first broken one."""
        for i, text in enumerate(observations, 1):
            for pattern in self.patterns(domain):
                if pattern.search(text):
                    return Verdict(score=0.0, label="fail", detail=f"step {i} matches {pattern.pattern!r}")
        for needle in self.must_contain:
            if not any(needle in text for text in observations):
                return Verdict(score=0.0, label="fail", detail=f"no step shows {needle!r}")
        if self.end_at_prompt and observations:
            last = observations[-1].rstrip().splitlines() or [""]
            if not domain_actions(domain).is_prompt_line(last[-1]):
                return Verdict(score=0.0, label="fail", detail="the last step does not end at the prompt")
        return Verdict(score=1.0, label="pass")


@dataclass(frozen=True)
class RuleScorer:
    """Scores by a :class:`RuleCheck` (no model call)."""

    rule: RuleCheck = field(default_factory=RuleCheck)
    name: str = "rule"

    async def score(self, context: PlanContext, steps: Sequence[ImaginedStep],
                    cache: ResponseCache | None) -> Verdict:
        return self.rule.check(context.domain, [s.observation for s in steps])


JUDGE_SYSTEM = (
    "You judge an agent's plan in a {display} environment. The agent has not acted yet: a world model "
    "imagined what its next actions would show. Decide whether, if the imagined observations are right, "
    "the task is accomplished (success), progressing without errors but not yet done (on track), or "
    "failed or stuck (failure). Explain briefly, then end with one line: 'Verdict: success', "
    "'Verdict: on track' or 'Verdict: failure'.")

_LABEL_RE = re.compile(r"\b(success(?:ful(?:ly)?)?|succeeded|on[\s_-]*track|fail(?:ure|ed|s)?)\b", re.I)
_LINE_RE = re.compile(r"^\W*(?:final\s+)?(?:verdict|status|answer|evaluation)\W*[:=]\s*(.+)$", re.I | re.M)


def _label(word: str) -> str:
    word = word.lower()
    return "success" if word.startswith("succe") else "failure" if word.startswith("fail") else "on track"


def parse_verdict(reply: str) -> str | None:
    """The judge's label (``success``, ``on track``, ``failure``) from a free-form reply, or None.

    Tried in order: a JSON object's ``verdict``/``status``; a ``Verdict: …`` line (the last one);
    ``\\boxed{…}``; the last label word anywhere. Thinking blocks are ignored.
    """
    text = remove_thinking(reply or "")
    for match in reversed(list(re.finditer(r"\{[^{}]*\}", text))):
        try:
            value = json.loads(match.group(0))
        except ValueError:
            continue
        word = value.get("verdict", value.get("status")) if isinstance(value, dict) else None
        found = _LABEL_RE.search(word) if isinstance(word, str) else None
        if found:
            return _label(found.group(1))
    for source in ([m.group(1) for m in _LINE_RE.finditer(text)][-1:]
                   + re.findall(r"\\boxed\{([^{}]*)\}", text)[-1:] + [text]):
        words = _LABEL_RE.findall(source)
        if words:
            return _label(words[-1])
    return None


def _render(steps: Sequence[ImaginedStep | TurnRecord]) -> str:
    def action(step: ImaginedStep | TurnRecord) -> str:
        return step.action if isinstance(step.action, str) else json.dumps(step.action, ensure_ascii=False)

    return "\n\n".join(f"Action {i}:\n{action(s)}\nObservation {i}:\n{s.observation}"
                       for i, s in enumerate(steps, 1)) or "(none)"


@dataclass(frozen=True)
class JudgeScorer:
    """A judge model's verdict on an imagined rollout (WebDreamer): 1 / 0.5 / 0.

    An unparsable reply is asked again (a new cache attempt) up to ``attempts`` times, then scored
    0 with the label ``unparsed``, so one bad reply cannot stop a plan.
    """

    backend: ChatBackend
    attempts: int = 2
    max_history_turns: int = 6
    name: str = "judge"

    def request(self, context: PlanContext, steps: Sequence[ImaginedStep]) -> ChatRequest:
        display = plugin_of(context.domain).display
        recent = context.history[-self.max_history_turns:]
        user = (f"# Task\n{context.task or '(not stated: judge whether the actions make progress)'}\n\n"
                f"# Initial state\n{context.initial or '(not shown)'}\n\n"
                f"# Steps taken for real (last {len(recent)})\n{_render(recent)}\n\n"
                f"# Imagined next steps\n{_render(steps)}")
        return ChatRequest(messages=(Message(role="system", content=JUDGE_SYSTEM.format(display=display)),
                                     Message(role="user", content=user)), temperature=0.0, seed=0)

    async def score(self, context: PlanContext, steps: Sequence[ImaginedStep],
                    cache: ResponseCache | None) -> Verdict:
        request, reply = self.request(context, steps), ""
        for attempt in range(max(1, self.attempts)):
            result = (await cache.call(self.backend, request, attempt)).result if cache is not None else \
                await self.backend.complete(request)
            reply = result.content
            label = parse_verdict(reply)
            if label is not None:
                return Verdict(score=JUDGE_SCORES[label], label=label)
        return Verdict(score=0.0, label="unparsed", detail=reply[-200:])

"""Rule-checked probes of a world model: the record each domain's generator returns, and its verdict.

Why probes: a rubric judge says how plausible an observation is; a probe says whether one specific,
checkable thing is right — an instruction obeyed (controllability), an error of the right class and
shape (error handling), a value from long ago reproduced (long-context consistency). Each probe is one
AgentWorldBench-style request (system prompt, history, current action) with an expected observation
and a *deterministic* verdict: a few :class:`Check` s every one of which must hold on the predicted
observation. Checks are data (kind + value), so a probe written out as a data row (:func:`probe_row`)
is verified the same way after it is read back (:func:`probe_from_row`).

Each domain package contributes a generator ``generate(seed: int, variants: int) -> list[Probe]``
through its plugin's ``probes`` reference; this module holds only what they share (stdlib and
:mod:`agentworld.schema`), so a plugin stays cheap to import.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from agentworld.schema import OBSERVATION_MARKER, strip_marker

Category = Literal["controllability", "error_handling", "long_context"]
CATEGORIES: tuple[Category, ...] = ("controllability", "error_handling", "long_context")
CheckKind = Literal["contains", "line", "regex", "absent"]
CONTEXT_GAPS: tuple[int, ...] = (10, 50, 100)
"""Intervening turns between where a value is established and where it is asked for again."""
TASK_PREFIX = "agentworld-probes"


@dataclass(frozen=True)
class Check:
    """One deterministic condition on an observation (its marker stripped).

    Kinds: ``contains`` (the text occurs), ``line`` (a line equals it, surrounding spaces ignored),
    ``regex`` (the pattern matches, ``re.M``), ``absent`` (the pattern does not match, ``re.M``).
    """

    kind: CheckKind
    value: str

    def holds(self, observation: str) -> bool:
        """Whether the condition holds on ``observation``."""
        if self.kind == "contains":
            return self.value in observation
        if self.kind == "line":
            return any(line.strip() == self.value.strip() for line in observation.splitlines())
        found = re.search(self.value, observation, re.M) is not None
        return found if self.kind == "regex" else not found

    def describe(self) -> str:
        """The check as one line (what the report lists for a failed probe)."""
        return f"{self.kind} {self.value!r}"


@dataclass(frozen=True)
class Probe:
    """One probe: the request (system prompt, history, action), the expected observation, the checks.

    ``expected`` holds every check (tests assert it), so a server replaying ground truth passes.
    ``gap`` is the number of intervening turns of a long-context probe (None otherwise).
    """

    id: str
    domain: str
    category: Category
    name: str
    system: str
    history: tuple[tuple[str, str], ...]
    action: str
    expected: str
    checks: tuple[Check, ...]
    gap: int | None = None


@dataclass(frozen=True)
class Verdict:
    """The outcome of a probe's checks on one observation: passed, and the checks that failed."""

    passed: bool
    failed: tuple[str, ...]


def verdict(checks: tuple[Check, ...], observation: str) -> Verdict:
    """Apply every check to the observation (its ``**Environment Observation:**`` marker stripped)."""
    text = strip_marker(observation)
    failed = tuple(c.describe() for c in checks if not c.holds(text))
    return Verdict(passed=not failed, failed=failed)


def observation(text: str) -> str:
    """An observation as AgentWorldBench rows store it (with the marker)."""
    return f"{OBSERVATION_MARKER}\n{text}"


def with_facts(system: str, facts: list[str]) -> str:
    """A system prompt with a ``# World facts`` section, as :mod:`agentworld.sim.history` writes it."""
    return system + "\n\n# World facts\n" + "\n".join(f"- {fact}" for fact in facts)


def system_prompt(package: str) -> str:
    """The shipped system prompt of the domain package ``package``."""
    return resources.files(package).joinpath("prompts/system_prompt.txt").read_text("utf-8")


def rng(seed: int, *parts: object) -> random.Random:
    """A random stream fixed by the seed and the parts (one per domain and template), independent of
    how many probes other templates make."""
    key = ":".join(str(p) for p in (seed, *parts))
    return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))


def token(r: random.Random, n: int = 6) -> str:
    """A short random lower-case word with digits (values nothing in a corpus would hold by chance)."""
    return "".join(r.choice("abcdefghjkmnpqrstuvwxyz23456789") for _ in range(n))


def probe_row(probe: Probe) -> dict[str, Any]:
    """The probe as an AgentWorldBench row; its verdict travels in the extra field ``probe``."""
    prompts = [a for a, _ in probe.history] + [probe.action]
    responses = [o for _, o in probe.history] + [probe.expected]
    return {"task": f"{TASK_PREFIX}/{probe.category}/{probe.domain}", "id": probe.id, "prompt": prompts,
            "response": responses, "system_str": probe.system, "turn_idx": len(prompts),
            "total_turns": len(prompts),
            "probe": {"category": probe.category, "name": probe.name, "gap": probe.gap,
                      "checks": [{"kind": c.kind, "value": c.value} for c in probe.checks]}}


def probe_from_row(row: dict[str, Any]) -> Probe:
    """The probe of a row written by :func:`probe_row` (raises KeyError/TypeError on another row)."""
    meta = row["probe"]
    history = tuple(zip(row["prompt"][:-1], row["response"][:-1], strict=True))
    return Probe(id=str(row["id"]), domain=row["task"].split("/")[-1], category=meta["category"],
                 name=meta["name"], system=row["system_str"], history=history, action=row["prompt"][-1],
                 expected=row["response"][-1], gap=meta.get("gap"),
                 checks=tuple(Check(kind=c["kind"], value=c["value"]) for c in meta["checks"]))


def make(domain: str, category: Category, name: str, n: int, system: str,
         history: list[tuple[str, str]], action: str, expected: str, checks: list[Check],
         gap: int | None = None) -> Probe:
    """A probe with its id (``domain-name-n``, plus the gap) and the observations given without marker."""
    suffix = f"-gap{gap}" if gap is not None else ""
    return Probe(id=f"{domain}-{name}-{n}{suffix}", domain=domain, category=category, name=name,
                 system=system, history=tuple((a, observation(o)) for a, o in history), action=action,
                 expected=observation(expected), checks=tuple(checks), gap=gap)


def line(value: str) -> Check:
    """A line of the observation equals ``value`` (surrounding spaces ignored)."""
    return Check("line", value)


def contains(value: str) -> Check:
    """``value`` occurs in the observation."""
    return Check("contains", value)


def regex(value: str) -> Check:
    """The pattern matches somewhere in the observation (``re.M``: ``^``/``$`` at line ends)."""
    return Check("regex", value)


def tool_action(tool: str, arguments: dict[str, Any]) -> str:
    """A JSON tool-call action as the tool domains' rows write it."""
    call = json.dumps({"tool_name": tool, "arguments": arguments}, ensure_ascii=False)
    return f"**Action:**\n```json\n{call}\n```"


def failure(patterns: tuple[str, ...]) -> Check:
    """The observation is a failure by the domain's own definition (``DomainPlugin.error_patterns``,
    what the data pipeline's retry detection reads): the error's *class*, beside checks of its shape."""
    return Check("regex", "|".join(f"(?:{p})" for p in patterns))

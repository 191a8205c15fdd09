"""Whether an observation reports a failure: the one definition every part of agentworld asks.

Why one: the data pipeline (retry cleaning, loss masking), the simulator's ``StepResult.is_error`` —
and so the MCP server's ``isError`` and the HTTP API's ``is_error`` — and the probes must agree on what
"this observation is an error" means, or a world model's ``Error: …`` answer is a failure to one and a
success to another. The definition is the domain's own ``DomainPlugin.error_patterns``
(:mod:`agentworld.domains.error_patterns`); an unknown domain gets the common ones.

>>> is_error("Error: no such order", "mcp"), is_error("Successfully wrote to /w/a", "mcp")
(True, False)
"""

from __future__ import annotations

import re
from functools import lru_cache

from agentworld.domains.base import DomainPlugin, plugin_of
from agentworld.domains.error_patterns import ERROR_HINTS
from agentworld.schema import OBSERVATION_MARKER


def observation_body(text: str) -> str:
    """The observation without its ``**Environment Observation:**`` header (framing, not content)."""
    text = text.lstrip()
    if text.startswith(OBSERVATION_MARKER):
        text = text[len(OBSERVATION_MARKER):]
    return text.strip("\n")


def error_patterns(domain: str | DomainPlugin) -> tuple[str, ...]:
    """The regular expressions (compiled with ``re.M``) marking an observation of ``domain`` as an error:
    its plugin's ``error_patterns`` (the common ones for an unknown domain)."""
    return plugin_of(domain).error_patterns


_REGEX_SYNTAX = frozenset("\\.^$*+?{}[]|()")


@lru_cache(maxsize=64)
def _error_re(domain: str, patterns: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.M)


@lru_cache(maxsize=64)
def _error_hints(patterns: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The (case-sensitive, lower-case) texts one of which an error must contain; None: unknown."""
    cased: list[str] = []
    lowered: list[str] = []
    for pattern in patterns:
        hints = ERROR_HINTS.get(pattern) or ((pattern,) if _REGEX_SYNTAX.isdisjoint(pattern) else None)
        if hints is None:
            return None
        for hint in hints:
            (lowered if hint.startswith("(?i)") else cased).append(hint.removeprefix("(?i)"))
    return tuple(cased), tuple(lowered)


def is_error(observation: str, domain: str, patterns: tuple[str, ...] | None = None) -> bool:
    """Whether ``observation`` reports a failure, by the patterns of ``domain`` (:func:`error_patterns`).

    A pattern match is evidence, not proof: a file that merely *contains* ``Error:`` reads as an
    error too. Both cleaning and masking accept that bias (errors keep their loss by default).
    ``patterns``: ``error_patterns(domain)`` when the caller has them already (a pipeline step looks
    them up once per domain, not once per observation).
    """
    if patterns is None:
        patterns = error_patterns(domain)
    hints = _error_hints(patterns)
    if hints is not None and not any(map(observation.__contains__, hints[0])) \
            and not (hints[1] and any(map(observation.lower().__contains__, hints[1]))):
        return False
    if len(observation) <= _MEMO_MAX_CHARS:
        return _remembered_is_error(observation, domain, patterns)
    return _search_error(observation, domain, patterns)


_MEMO_MAX_CHARS = 8192


@lru_cache(maxsize=512)
def _remembered_is_error(observation: str, domain: str, patterns: tuple[str, ...]) -> bool:
    """:func:`is_error` remembered: cleaning and masking ask about the same observations a few
    samples apart, and the search is a good part of either's cost (memory: at most 512 small texts)."""
    return _search_error(observation, domain, patterns)


def _search_error(observation: str, domain: str, patterns: tuple[str, ...]) -> bool:
    return bool(_error_re(domain, patterns).search(observation_body(observation)))


__all__ = ["error_patterns", "is_error", "observation_body"]

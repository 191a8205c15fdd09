"""Regular expressions that mark an observation as a failure: the ones every domain shares, and the shells'.

A domain's plugin lists its patterns (``DomainPlugin.error_patterns``, default :data:`COMMON_ERRORS`);
the data pipeline's retry detection and loss masking read them (:func:`agentworld.data.tokens.is_error`).
They live here, not in one domain's package, because several domains (every shell) share them; the
module holds only strings, so a plugin may import it and stay cheap.
"""

from __future__ import annotations

COMMON_ERRORS: tuple[str, ...] = (
    r"Traceback \(most recent call last\)",
    r"^\s*\w*(?:Error|Exception):",
    r'"error"\s*:(?!\s*(?:null|false|""|\[\]|\{\}))',
)
"""Failures any domain can show: a Python traceback, ``SomeError:`` at a line start, a JSON ``"error"``."""

SHELL_ERRORS: tuple[str, ...] = (
    r"command not found", r"No such file or directory", r"Permission denied", r"syntax error",
    r"Segmentation fault", r"^bash: ",
)
"""What a shell prints when a command fails (terminal, os, swe)."""

TOOL_SHELL_ERRORS: tuple[str, ...] = (
    COMMON_ERRORS[0], r"^\s*\w*(?:Error|Exception):(?!\s*\(none\)\s*$)", COMMON_ERRORS[2],
    r"^Exit Code: [1-9]", *SHELL_ERRORS)
"""A coding agent's shell tool (SWE): every result has an ``Error: (none)`` field, which is no failure;
a non-zero ``Exit Code:`` is one."""

ERROR_HINTS: dict[str, tuple[str, ...]] = {
    TOOL_SHELL_ERRORS[1]: ("Error:", "Exception:"),
    TOOL_SHELL_ERRORS[3]: ("Exit Code: ",),
    COMMON_ERRORS[0]: ("Traceback (most recent call last)",),
    COMMON_ERRORS[1]: ("Error:", "Exception:"),
    COMMON_ERRORS[2]: ('"error"',),
    r"^bash: ": ("bash: ",),
    r"^\s*(?i:error)\b": ("(?i)error",),
    r"\b404 (?i:not found)\b": ("404 ",),
}
"""Texts of which every match of a pattern contains one (``(?i)`` first: in any case); a pattern
without regex syntax is its own. Why: the patterns are tried at every position of the text, so a
search costs tens of times more than looking for a few plain strings, and most observations hold
none of them. A pattern with regex syntax and no entry here is still matched, by the regex alone."""

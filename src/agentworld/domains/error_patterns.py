"""Regular expressions that mark an observation as a failure: the ones every domain shares, and the shells'.

A domain's plugin lists its patterns (``DomainPlugin.error_patterns``, default :data:`COMMON_ERRORS`);
the data pipeline's retry detection and loss masking read them (:func:`agentworld.domains.failures.is_error`).
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

_USAGE_ERRORS = ("unrecognized option", "invalid option", "option requires an argument", "operand")
_FILE_ERRNOS = ("Read-only file system", "Directory not empty", "Is a directory", "Not a directory",
                "File exists", "Operation not permitted", "No space left on device",
                "Device or resource busy", "Too many levels of symbolic links", "Input/output error",
                "Disk quota exceeded")

SHELL_ERRORS: tuple[str, ...] = (
    r"command not found", r"No such file or directory", r"Permission denied", r"syntax error",
    r"Segmentation fault", r"^bash: ",
    r"^[\w.+-]+: (?:unrecognized option|invalid option|option requires an argument"
    r"|missing (?:destination )?(?:file )?operand|extra operand)\b",
    r"^Try ['‘`][\w.+-]+ --help['’] (?:or [^\n]+ )?for more information\.",
    rf"^[\w.+-]+: [^\n]*: (?:{'|'.join(_FILE_ERRNOS)})[ \t]*$",
)
"""What a shell prints when a command fails (terminal, os, swe): besides bash's own, a GNU tool's usage
error (``ls: unrecognized option '--x'``, ``mv: missing file operand``, then ``Try 'ls --help' for more
information.``) and its failure on a file, ``prog: …: <strerror>`` at a line's end (``rmdir: failed to
remove 'a': Directory not empty``), the line shape keeping prose that names an error out."""

TOOL_SHELL_ERRORS: tuple[str, ...] = (
    COMMON_ERRORS[0], r"^\s*\w*(?:Error|Exception):(?!\s*\(none\)\s*$)", COMMON_ERRORS[2],
    r"^Exit Code: [1-9]", *SHELL_ERRORS)
"""A coding agent's shell tool (SWE): every result has an ``Error: (none)`` field, which is no failure;
a non-zero ``Exit Code:`` is one."""

_OBSERVATION_START = r"\A(?:\*\*Environment Observation:\*\*)?\s*"
_NODE_ERRNOS = ("ACCES", "BADF", "BUSY", "EXIST", "INVAL", "IO", "ISDIR", "LOOP", "MFILE", "NAMETOOLONG",
                "NOENT", "NOSPC", "NOTDIR", "NOTEMPTY", "PERM", "ROFS", "XDEV")
_MCP_MESSAGES = ("Destination already exists: ", "Parent directory does not exist: ",
                 "Could not find exact match for edit:", "Entity with name ")

MCP_ERRORS: tuple[str, ...] = (
    rf"{_OBSERVATION_START}MCP error -?\d+: ",
    rf"{_OBSERVATION_START}E(?:{'|'.join(_NODE_ERRNOS)}): [a-z][a-z /-]*, [a-z]+\b",
    rf"{_OBSERVATION_START}Access denied - [\w -]+: ",
    rf"{_OBSERVATION_START}(?:(?:Destination already exists|Parent directory does not exist): \S"
    r"|Could not find exact match for edit:$|Entity with name [^\n]+ not found$)",
)
"""Error results of the reference MCP servers that carry no ``Error`` word: the SDK's protocol error
(``MCP error -32602: Tool x not found``), a Node system error (``ENOENT: no such file or directory,
open '/workspace/a'``), the filesystem server's ``Access denied - path outside allowed directories: …``
and its and the memory server's own messages. Only at the observation's start (after the marker): a
server's error result is that text alone, while a file read through it may mention any of them."""

SEARCH_TOOL_ERRORS: tuple[str, ...] = (r"^Key not found: \[[^\n]*\]$",)
"""``dict_memory``'s report of the keys it does not hold (``Key not found: ['queue']``), on its own line
after the ones it found: the keys the agent asked for are missing."""

ERROR_HINTS: dict[str, tuple[str, ...]] = {
    TOOL_SHELL_ERRORS[1]: ("Error:", "Exception:"),
    TOOL_SHELL_ERRORS[3]: ("Exit Code: ",),
    COMMON_ERRORS[0]: ("Traceback (most recent call last)",),
    COMMON_ERRORS[1]: ("Error:", "Exception:"),
    COMMON_ERRORS[2]: ('"error"',),
    r"^bash: ": ("bash: ",),
    r"^\s*(?i:error)\b": ("(?i)error",),
    r"\b404 (?i:not found)\b": ("404 ",),
    SHELL_ERRORS[6]: _USAGE_ERRORS,
    SHELL_ERRORS[7]: ("--help",),
    SHELL_ERRORS[8]: _FILE_ERRNOS,
    MCP_ERRORS[0]: ("MCP error ",),
    MCP_ERRORS[1]: tuple(f"E{code}: " for code in _NODE_ERRNOS),
    MCP_ERRORS[2]: ("Access denied - ",),
    MCP_ERRORS[3]: _MCP_MESSAGES,
    SEARCH_TOOL_ERRORS[0]: ("Key not found: [",),
}
"""Texts of which every match of a pattern contains one (``(?i)`` first: in any case); a pattern
without regex syntax is its own. Why: the patterns are tried at every position of the text, so a
search costs tens of times more than looking for a few plain strings, and most observations hold
none of them. A pattern with regex syntax and no entry here is still matched, by the regex alone."""

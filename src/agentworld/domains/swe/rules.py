"""Rule scoring of SWE observations: content apart from frame, file views and diffs by structure.

The frame is what the call itself fixes: a shell result's ``Command:``/``Directory:`` lines and its
``(none)`` fields and process group, a listing's ``Directory listing for …:`` header, ``---``
separators, a truncated read's notice, the todo tool's fixed reminder text. Content is what the
environment added: command output and exit code, file lines, listing entries, match lines, the
one-line answers of edits and errors. Deterministic content — the exit code, an edit's or error's
answer, lines the session wrote or already showed — must match exactly. Structure compares the kind of
result, a shell result's fields in order, line shapes (diff, numbered source, test summary), the hunk
headers of a diff and the line numbers of a file view.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from agentworld.domains.actions import tool_call
from agentworld.domains.content import mask
from agentworld.domains.rules import (
    DomainRules,
    Session,
    Tier,
    clean,
    is_metadata,
    lines_of,
    multiset_f1,
    norm,
    shape_structure,
)

SHELL_FIELDS = ("Command:", "Directory:", "Output:", "Error:", "Exit Code:", "Signal:", "Background PIDs:",
                "Process Group PGID:")
_FRAME = re.compile("|".join((
    r"^Command: ", r"^Directory: ", r"^Error: \(none\)$", r"^Signal: \(none\)$",
    r"^Background PIDs: \(none\)$",
    r"^Process Group PGID: \S+$", r"^Directory listing for .*:$", r"^---$",
    r"^IMPORTANT: The file content has been truncated\.$", r"^Action: To read more of the file",
    r"^--- FILE CONTENT \(truncated\) ---$", r"^Todos have been modified successfully\.",
    r"^</?system-reminder>$",
    r"^Your todo list (has changed|is now empty)\.", r"^Todo list has been cleared\.$")))
_DETERMINISTIC = re.compile("|".join((
    r"^Exit Code: ", r"^Successfully (modified|overwrote|created)", r"^Created new file: ",
    r"^Failed to edit",
    r"^File not found", r"must be (absolute|within one of the workspace)", r"^Path is (a|not a) directory",
    r"^Error listing directory", r"^No (matches|files) found", r"^No changes to apply", r"command not found",
    r"No such file or directory", r"^Tool \".*\" not found", r"^Invalid regular expression",
    r"^\[\{.*\}\]\. ")))
_HUNK = re.compile(r"^@@ -\d+(,\d+)? \+\d+(,\d+)? @@")
_NUMBERED = re.compile(r"^\s*(?:L)?(\d+)(?:[\t:]|\s{2,})")


def is_shell(text: str) -> bool:
    lines = clean(text).lstrip("\n").splitlines()
    return bool(lines) and lines[0].startswith("Command: ") and any(x.startswith("Exit Code:") for x in lines)


def swe_units(text: str) -> list[str]:
    """Lines; in a shell result the ``Output:`` label is cut off, so the first output line is a unit."""
    if not is_shell(text):
        return lines_of(clean(text))
    units, in_output = [], False
    for line in clean(text).splitlines():
        if line.startswith("Output:") and not in_output:
            in_output, line = True, line[len("Output:"):]
        elif in_output and line.startswith("Error: "):
            in_output = False
        if line.strip():
            units.append(norm(line))
    return units


def swe_frame(units: list[str], _: Session) -> list[bool]:
    return [bool(_FRAME.search(u)) for u in units]


def _written(session: Session) -> set[str]:
    """Lines the session's calls wrote (``write_file`` content, ``replace`` new text), this one included."""
    out: set[str] = set()
    for action in [a for a, _ in session.history] + [session.action]:
        call = tool_call(action)
        if call is None:
            continue
        for key in ("content", "new_string"):
            value = call[1].get(key)
            if isinstance(value, str):
                out.update(norm(x) for x in value.splitlines() if x.strip())
    return out


@functools.lru_cache(maxsize=512)
def _known(session: Session) -> tuple[frozenset[str], frozenset[str]]:
    """Lines the session showed and lines it wrote; cached, since one sample is scored many times
    (the truth, each baseline, each corruption rate) and SWE histories hold whole files."""
    return session.seen(), frozenset(_written(session))


def swe_tiers(units: list[str], session: Session) -> list[Tier]:
    """Exit codes, edit and error answers, lines the session wrote or showed are deterministic."""
    seen, written = _known(session)
    tiers: list[Tier] = []
    for unit in units:
        if is_metadata(unit):
            tiers.append("metadata")
        elif _DETERMINISTIC.search(unit) or unit in written or norm(mask(unit).text) in seen:
            tiers.append("deterministic")
        else:
            tiers.append("environment")
    return tiers


KINDS = (("listing", r"^Directory (listing for|.* is empty)"), ("matches", r"^(Found|No) .*match"),
         ("files", r"^(Found \d+ file|No files found)"), ("edit", r"^(Successfully|Created new file)"),
         ("todo", r"^(Todos have been|Todo list has been)"), ("truncated", r"^IMPORTANT: The file"),
         ("error", _DETERMINISTIC.pattern))


def kind(text: str) -> str:
    """The kind of result: a shell run, a listing, a search, an edit, an error, todo text or file lines."""
    body = clean(text).strip()
    first = body.splitlines()[0] if body else ""
    if not body:
        return "empty"
    if is_shell(body):
        return "shell"
    for name, pattern in KINDS:
        if re.search(pattern, first):
            return name
    return "file"


def _output(text: str) -> str:
    """The part of a result whose line shapes count: a shell result's output, else the whole text."""
    if not is_shell(text):
        return clean(text)
    units = swe_units(text)
    return "\n".join(u for u in units if not _FRAME.search(u) and not u.startswith("Exit Code:"))


def swe_structure(pred: str, truth: str, session: Session) -> tuple[float, dict[str, float]]:
    """Kind of result, shell fields in order and the echoed command, line shapes, diff hunks, line numbers."""
    checks: dict[str, float] = {"kind": float(kind(pred) == kind(truth))}
    p_lines, t_lines = clean(pred).splitlines(), clean(truth).splitlines()
    if is_shell(truth):
        fields = [f for f in SHELL_FIELDS if any(x.startswith(f) for x in t_lines)]
        found = [next((i for i, x in enumerate(p_lines) if x.startswith(f)), -1) for f in fields]
        in_order = sum(1 for i, n in enumerate(found) if n >= 0 and all(n > m for m in found[:i] if m >= 0))
        checks["fields"] = in_order / len(fields) if fields else 1.0
        checks["command"] = float(bool(p_lines) and bool(t_lines) and p_lines[0] == t_lines[0])
    checks["shapes"] = shape_structure(_output(pred), _output(truth), session)[0] / 100
    t_hunks = [x.split(" @@")[0] for x in t_lines if _HUNK.match(x)]
    if t_hunks:
        checks["hunks"] = multiset_f1([x.split(" @@")[0] for x in p_lines if _HUNK.match(x)], t_hunks) / 100
    t_numbers = [m.group(1) for x in t_lines if (m := _NUMBERED.match(x))]
    if len(t_numbers) >= 2:
        checks["line_numbers"] = multiset_f1([m.group(1) for x in p_lines if (m := _NUMBERED.match(x))],
                                             t_numbers) / 100
    return 100 * sum(checks.values()) / len(checks), checks


def _frame_of_call(name: str, args: dict[str, Any]) -> list[str]:
    if name == "run_shell_command":
        directory = args.get("directory") or "(root)"
        return [f"Command: {args.get('command', '')}", f"Directory: {directory}", "Error: (none)",
                "Signal: (none)", "Background PIDs: (none)"]
    if name == "list_directory":
        return [f"Directory listing for {args.get('path', '')}:"]
    if name == "todo_write":
        if not args.get("todos"):
            return ["Todo list has been cleared.", "<system-reminder>", "Your todo list is now empty. DO NOT "
                    "mention this explicitly to the user. You have no pending tasks in your todo list.",
                    "</system-reminder>"]
        return ["Todos have been modified successfully. Ensure that you continue to use the todo list to "
                "track your progress. Please proceed with the current tasks if applicable",
                "<system-reminder>",
                "Your todo list has changed. DO NOT mention this explicitly to the user. Here are the latest "
                "contents of your todo list:", "</system-reminder>"]
    if name == "read_file" and (args.get("offset") is not None or args.get("limit") is not None):
        end = int(args.get("offset") or 0) + int(args.get("limit") or 2000)
        return ["IMPORTANT: The file content has been truncated.",
                "Action: To read more of the file, you can use the 'offset' and 'limit' parameters in a "
                "subsequent 'read_file' call. For example, to read the next section of the file, use "
                f"offset: {end}.",
                "--- FILE CONTENT (truncated) ---"]
    return []


def swe_frame_only(_truth: str, session: Session) -> str:
    """What the call alone fixes (see :func:`_frame_of_call`); nothing for other tools."""
    call = tool_call(session.action)
    return "\n".join(_frame_of_call(*call)) if call else ""


RULES = DomainRules(swe_units, swe_tiers, swe_structure, swe_frame, swe_frame_only)

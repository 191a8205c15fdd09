"""The coding-agent tools, run *inside* the sandbox: one JSON request on stdin, one JSON reply on stdout.

Why a script of its own: every tool of the SWE domain — file reads and writes included — must run
inside the bubblewrap sandbox, so that the terminal's confinement holds for them (a path outside the
workspace, a ``..`` or a symlink out of it resolves inside the sandbox, never on the host).
:class:`agentworld.envs.workspace.Workspace` sends this file's source to the sandbox's own Python
(``python3 -I -S -c``) with the request on stdin. It imports nothing but the standard library.

Results are the text the coding agent's model reads (Qwen Code / Gemini CLI ``llmContent``), in
their words: ``run_shell_command`` answers ``Command: … Exit Code: … Process Group PGID: …``, an edit
``Successfully modified file: <path> (1 replacements).``, a search ``Found 2 matches for pattern …``.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

IGNORED_DIRS = {".git", "node_modules", "__pycache__", ".pytest_cache"}
MAX_READ_LINES = 2000
MAX_OUTPUT_CHARS = 200_000
BACKGROUND_WAIT_S = 1.0
"""A shell command's output is cut here (the agent's tools cap what they hand the model too)."""
RECENT_S = 24 * 3600
TODO_FILE = "/root/.agentworld-todos.json"
TODO_STATUSES = ("pending", "in_progress", "completed")
TODOS_CLEARED = ("Todo list has been cleared.\n\n<system-reminder>\nYour todo list is now empty. DO NOT "
                 "mention this explicitly to the user. You have no pending tasks in your todo list.\n"
                 "</system-reminder>")
TODOS_CHANGED = ("Todos have been modified successfully. Ensure that you continue to use the todo list to "
                 "track your progress. Please proceed with the current tasks if applicable\n\n"
                 "<system-reminder>\nYour todo list has changed. DO NOT mention this explicitly to the user. "
                 "Here are the latest contents of your todo list:\n\n{}. Continue on with the tasks at hand "
                 "if applicable.\n</system-reminder>")


class ToolError(Exception):
    """A refused or failed call, answered with this text."""


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def resolve(raw: Any, root: Path, what: str = "File path") -> Path:
    """An absolute path inside the workspace, symlinks resolved; anything else is refused."""
    if not isinstance(raw, str) or not raw:
        raise ToolError(f"params must have required property '{what.lower().replace(' ', '_')}'")
    if not os.path.isabs(raw):
        raise ToolError(f"{what} must be absolute, but was relative: {raw}. "
                        "You must provide an absolute path.")
    real = Path(os.path.realpath(raw))
    if not _inside(Path(os.path.normpath(raw)), root) or not _inside(real, root):
        raise ToolError(f"{what} must be within one of the workspace directories: {root}")
    return real


def search_base(args: dict[str, Any], root: Path) -> Path:
    """The folder a search runs in: ``path`` (absolute, or relative to the workspace), else the workspace."""
    raw = args.get("path")
    if not raw:
        return root
    return resolve(raw if os.path.isabs(str(raw)) else str(root / str(raw)), root, "Path")


def walk(base: Path) -> list[Path]:
    """Files under ``base`` (no ignored folders, no symlinks followed), sorted by path."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in IGNORED_DIRS)
        found.extend(Path(folder, f) for f in sorted(files))
    return found


def braces(pattern: str) -> list[str]:
    """``*.{py,txt}`` → ``*.py``, ``*.txt`` (the glob libraries agents' tools use expand braces)."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    return [x for alt in m.group(1).split(",") for x in braces(pattern[:m.start()] + alt + pattern[m.end():])]


def glob_match(rel: str, pattern: str, case_sensitive: bool = True) -> bool:
    if not case_sensitive:
        rel, pattern = rel.lower(), pattern.lower()
    for pat in braces(pattern):
        regex = re.escape(pat).replace(r"\*\*/", "(?:.*/)?").replace(r"\*\*", ".*")
        regex = regex.replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
        if re.fullmatch(regex, rel):
            return True
    return False


# -- tools -------------------------------------------------------------------------------------------

def run_shell_command(args: dict[str, Any], root: Path, timeout: float) -> str:
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ToolError("Command cannot be empty.")
    directory = args.get("directory")
    cwd = root
    if directory:
        if os.path.isabs(str(directory)):
            raise ToolError("Directory cannot be absolute. "
                            "Please refer to workspace directories by their name.")
        cwd = resolve(str(root / str(directory)), root, "Directory")
        if not cwd.is_dir():
            raise ToolError(f"Directory '{directory}' is not a registered workspace directory.")
    if args.get("is_background") is True:
        return _background(command, directory, cwd)
    proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    error = "(none)"
    try:
        raw, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raw, _ = proc.communicate()
        error = f"Command timed out after {timeout:g} seconds."
    code = proc.returncode
    exit_code, sig = (str(code), "(none)") if code >= 0 else ("(none)", str(-code))
    return _shell_result(command, directory, raw, error, exit_code, sig, "(none)", proc.pid)


def _background(command: str, directory: Any, cwd: Path) -> str:
    """``is_background``: start it, answer after :data:`BACKGROUND_WAIT_S` with what it printed so far.

    The process lives only as long as this call's sandbox process (it is not kept across calls).
    """
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = proc.wait(timeout=BACKGROUND_WAIT_S)
        except subprocess.TimeoutExpired:
            code = None
        out.seek(0)
        raw = out.read()
    running = str(proc.pid) if code is None else "(none)"
    exit_code = "0" if code is None else str(code) if code >= 0 else "(none)"
    sig = "(none)" if code is None or code >= 0 else str(-code)
    return _shell_result(command, directory, raw, "(none)", exit_code, sig, running, proc.pid)


def _shell_result(command: str, directory: Any, raw: bytes, error: str, exit_code: str, sig: str,
                  background: str, pgid: int) -> str:
    output = raw.decode("utf-8", "replace").rstrip("\n")
    if len(output) > MAX_OUTPUT_CHARS:
        cut = len(output) - MAX_OUTPUT_CHARS
        output = f"{output[:MAX_OUTPUT_CHARS]}\n... [{cut} more characters truncated]"
    return "\n".join([f"Command: {command}", f"Directory: {directory or '(root)'}",
                      f"Output: {output or '(empty)'}", f"Error: {error}", f"Exit Code: {exit_code}",
                      f"Signal: {sig}", f"Background PIDs: {background}", f"Process Group PGID: {pgid}"])


def read_file(args: dict[str, Any], root: Path, _: float) -> str:
    path = resolve(args.get("absolute_path"), root)
    if not path.exists():
        raise ToolError(f"File not found: {args['absolute_path']}")
    if path.is_dir():
        raise ToolError(f"Path is a directory, not a file: {args['absolute_path']}")
    raw = path.read_bytes()
    if b"\0" in raw[:8192]:
        return f"Cannot display content of binary file: {args['absolute_path']}"
    lines = raw.decode("utf-8", "replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    offset, limit = args.get("offset"), args.get("limit")
    if offset is not None and (not isinstance(offset, int) or offset < 0):
        raise ToolError("Offset must be a non-negative number")
    if limit is not None and (not isinstance(limit, int) or limit <= 0):
        raise ToolError("Limit must be a positive number")
    start = offset or 0
    if start >= max(len(lines), 1) and start:
        raise ToolError(f"Offset {start} is beyond the end of the file ({len(lines)} lines).")
    end = min(len(lines), start + (limit or MAX_READ_LINES))
    body = "\n".join(lines[start:end])
    if start == 0 and end == len(lines):
        return raw.decode("utf-8", "replace")
    return ("IMPORTANT: The file content has been truncated.\n"
            f"Status: Showing lines {start + 1}-{end} of {len(lines)} total lines.\n"
            "Action: To read more of the file, you can use the 'offset' and 'limit' parameters in a "
            "subsequent 'read_file' call. For example, to read the next section of the file, use offset: "
            f"{end}.\n\n"
            f"--- FILE CONTENT (truncated) ---\n{body}")


def write_file(args: dict[str, Any], root: Path, _: float) -> str:
    path = resolve(args.get("file_path"), root)
    content = args.get("content")
    if not isinstance(content, str):
        raise ToolError("params must have required property 'content'")
    if path.is_dir():
        raise ToolError(f"Path is a directory, not a file: {args['file_path']}")
    existed = path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    return (f"Successfully overwrote file: {args['file_path']}." if existed
            else f"Successfully created and wrote to new file: {args['file_path']}.")


def replace(args: dict[str, Any], root: Path, _: float) -> str:
    path = resolve(args.get("file_path"), root)
    old, new = args.get("old_string"), args.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        raise ToolError("params must have required property 'old_string' and 'new_string'")
    expected = args.get("expected_replacements", 1)
    if not isinstance(expected, int) or expected < 1:
        raise ToolError("params/expected_replacements must be >= 1")
    shown = args["file_path"]
    if not path.exists():
        if old == "":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(new, encoding="utf-8")
            return f"Created new file: {shown} with provided content."
        raise ToolError("File not found. Cannot apply edit. Use an empty old_string to create a new file.")
    if old == "":
        raise ToolError("Failed to edit. Attempted to create a file that already exists.")
    text = path.read_text(encoding="utf-8")
    found = text.count(old)
    if found == 0:
        raise ToolError(f"Failed to edit, 0 occurrences found for old_string in {shown}. No edits made. "
                        "The exact text in old_string was not found. Ensure you're not escaping content "
                        "incorrectly and check whitespace, indentation, and context. Use read_file tool to "
                        "verify.")
    if found != expected:
        term = "occurrence" if expected == 1 else "occurrences"
        raise ToolError(f"Failed to edit, expected {expected} {term} but found {found} for old_string in "
                        f"file: {shown}")
    if old == new:
        raise ToolError("No changes to apply. The old_string and new_string are identical.")
    path.write_text(text.replace(old, new), encoding="utf-8")
    return f"Successfully modified file: {shown} ({found} replacements)."


def list_directory(args: dict[str, Any], root: Path, _: float) -> str:
    raw = args.get("path")
    path = resolve(raw, root, "Path")
    if not path.exists():
        raise ToolError(f"Error listing directory: ENOENT: no such file or directory, stat '{raw}'")
    if not path.is_dir():
        raise ToolError(f"Error: Path is not a directory: {raw}")
    ignore = [p for p in args.get("ignore") or [] if isinstance(p, str)]
    entries = [e for e in path.iterdir() if e.name not in IGNORED_DIRS
               and not any(fnmatch.fnmatchcase(e.name, p) for p in ignore)]
    if not entries:
        return f"Directory {raw} is empty."
    entries.sort(key=lambda e: (not e.is_dir(), e.name.lower(), e.name))
    return f"Directory listing for {raw}:\n" + "\n".join(f"[DIR] {e.name}" if e.is_dir() else e.name
                                                         for e in entries)


def glob(args: dict[str, Any], root: Path, _: float) -> str:
    pattern = args.get("pattern")
    if not isinstance(pattern, str) or not pattern.strip():
        raise ToolError("The 'pattern' parameter cannot be empty.")
    base = search_base(args, root)
    if not base.is_dir():
        raise ToolError(f"Search path does not exist {base}")
    sensitive = bool(args.get("case_sensitive", False))
    hits = [f for f in walk(base) if glob_match(f.relative_to(base).as_posix(), pattern, sensitive)]
    if not hits:
        return f'No files found matching pattern "{pattern}" within {base}'
    now = time.time()
    mtimes = {f: f.stat().st_mtime for f in hits}
    recent = sorted((f for f in hits if now - mtimes[f] < RECENT_S), key=lambda f: -mtimes[f])
    older = sorted(f for f in hits if now - mtimes[f] >= RECENT_S)
    return (f'Found {len(hits)} file(s) matching "{pattern}" within {base}, sorted by modification time '
            "(newest first):\n" + "\n".join(str(f) for f in recent + older))


def search_file_content(args: dict[str, Any], root: Path, _: float) -> str:
    pattern = args.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise ToolError("params must have required property 'pattern'")
    try:
        regex = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ToolError(f"Invalid regular expression pattern provided: {pattern}. Error: {exc}") from None
    base = search_base(args, root)
    if not base.is_dir():
        raise ToolError(f"Path does not exist: {base}")
    include = args.get("include")
    shown = args.get("path") or "."
    where = f'in path "{shown}"' + (f' (filter: "{include}")' if include else "")
    blocks, count = [], 0
    for file in walk(base):
        rel = file.relative_to(base).as_posix()
        if include and not (glob_match(rel, include) or glob_match(file.name, include)):
            continue
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        found = [f"L{n}: {line.strip()}" for n, line in enumerate(lines, 1) if regex.search(line)]
        if found:
            count += len(found)
            blocks.append(f"File: {rel}\n" + "\n".join(found) + "\n---")
    if not count:
        return f'No matches found for pattern "{pattern}" {where}.'
    term = "match" if count == 1 else "matches"
    return f'Found {count} {term} for pattern "{pattern}" {where}:\n---\n' + "\n".join(blocks)


def todo_write(args: dict[str, Any], _root: Path, _: float) -> str:
    todos = args.get("todos")
    if not isinstance(todos, list):
        raise ToolError("params must have required property 'todos'")
    for item in todos:
        content = item.get("content") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(content, str) or not content.strip():
            raise ToolError('Each todo must have a non-empty "content" string.')
        if item.get("status") not in TODO_STATUSES:
            raise ToolError('Each todo must have a valid "status" (pending, in_progress, completed).')
        if not isinstance(item.get("id"), str) or not item["id"]:
            raise ToolError('Each todo must have a non-empty "id" string.')
    if len({item["id"] for item in todos}) != len(todos):
        raise ToolError("Todo IDs must be unique within the array.")
    Path(TODO_FILE).write_text(json.dumps(todos), encoding="utf-8")
    if not todos:
        return TODOS_CLEARED
    return TODOS_CHANGED.format(json.dumps(todos, ensure_ascii=False, separators=(",", ":")))


TOOLS = {f.__name__: f for f in (run_shell_command, read_file, write_file, replace, list_directory, glob,
                                 search_file_content, todo_write)}


def answer(request: dict[str, Any]) -> str:
    tool, args = request.get("tool"), request.get("args")
    root = Path(request.get("root") or "/app")
    if tool not in TOOLS:
        return f'Tool "{tool}" not found in registry. Tools must use the exact names that are registered.'
    if not isinstance(args, dict):
        return "params must be object"
    try:
        return TOOLS[tool](args, root, float(request.get("timeout") or 60))
    except ToolError as exc:
        return str(exc)
    except OSError as exc:
        return f"Error executing tool {tool}: {exc.strerror or exc}"


def main() -> None:
    request = json.loads(sys.stdin.read())
    sys.stdout.write(json.dumps({"text": answer(request)}))


if __name__ == "__main__":
    main()

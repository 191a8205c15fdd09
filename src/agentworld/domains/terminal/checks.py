"""Terminal checks: the contradictions of a predicted screen with the shell facts, and their repairs.

Prompts must show the session's host, user and cwd; ``cat``/``head``/``tail`` of files written in
the session, ``echo $VAR`` and ``ls`` of fully known directories must show exactly what is known;
``ls`` of any other directory must list the files the session created there and none it removed;
a simple command whose standard output goes to a file prints nothing on the screen but errors.
Each finding comes with a :class:`Fix` (lines of the screen to replace) where one is certain.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from agentworld.domains.actions import PROMPT_RE
from agentworld.domains.ledger import Contradiction
from agentworld.domains.terminal.shell_facts import ShellFacts, absolute_path, display_path, resolve_path
from agentworld.domains.terminal.shell_reader import ASSIGN, Command, echo_output, expand
from agentworld.domains.terminal.shell_replay import Step

CD_ERROR = re.compile(r"\b(?:cd|pushd|popd): ")
STDOUT_ONLY = frozenset({"echo", "printf", "cat", "pwd", "ls", "seq", "date", "head", "tail", "wc", "sort",
                         "uniq", "tr", "basename", "dirname", "expr"})
"""Commands whose normal output is standard output only: redirected, they print only errors."""
ERROR_LINE = re.compile(r"^[\w./-]+: |No such file|Permission denied|[Ee]rror|cannot |not found")
_TO_FILE = (">", ">>", ">|", "&>", "&>>")


@dataclass(frozen=True)
class Fix:
    """A repair: replace lines ``start:end`` of the observation by ``lines``."""

    start: int
    end: int
    lines: tuple[str, ...]


Finding = tuple[Contradiction, Fix | None]


def check_prompts(lines: list[str], before: ShellFacts, step: Step, observation: str) -> list[Finding]:
    """Every prompt on the screen must show the session's host and user, and the cwd at that point."""
    out: list[Finding] = []
    if step.resync:
        return out
    last = len(lines) - 1
    for i, line in enumerate(lines):
        m = PROMPT_RE.match(line.rstrip())
        if not m:
            continue
        want_cwd: str | None = None
        if i == 0 and before.at_prompt and m.group("cmd") is not None:
            want_cwd = before.cwd
        elif i == last and m.group("cmd") is None and not CD_ERROR.search(observation):
            want_cwd = step.after.cwd
        got_cwd = absolute_path(m.group("cwd"), before.home)
        problems = []
        if m.group("host") != before.host:
            problems.append(Contradiction(kind="prompt_host", expected=before.host, found=m.group("host"),
                                          message=f"the prompt shows host {m.group('host')!r} but this "
                                                  f"session's host is {before.host!r}"))
        if before.user and m.group("user") != before.user:
            problems.append(Contradiction(kind="prompt_user", expected=before.user, found=m.group("user"),
                                          message=f"the prompt shows user {m.group('user')!r} but the "
                                                  f"session runs as {before.user!r}"))
        exact = before.user == "root" or "HOME" in before.env
        shown = m.group("cwd") if exact else got_cwd
        if want_cwd and shown != (display_path(want_cwd, before.home) if exact else want_cwd):
            problems.append(Contradiction(kind="prompt_cwd", expected=want_cwd, found=got_cwd,
                                          message=f"the prompt shows cwd {m.group('cwd')!r} but the "
                                                  f"working directory is {want_cwd} at that point"))
        if problems:
            cwd = display_path(want_cwd, before.home) if want_cwd else m.group("cwd")
            cmd = f" {m.group('cmd')}" if m.group("cmd") is not None else ""
            fixed = f"{before.user or m.group('user')}@{before.host}:{cwd}{m.group('sigil')}{cmd}"
            out += [(p, Fix(i, i + 1, (fixed,))) for p in problems]
    return out


def check_output(cmd: Command, lines: list[str], f: ShellFacts) -> list[Finding]:
    """``cat``/``head``/``tail`` of written files, ``echo $X``, ``ls``, and redirected output."""
    if cmd.heredoc or cmd.pipe_in or cmd.pipe_out or not f.at_prompt or len(lines) < 2:
        return []
    first, last = PROMPT_RE.match(lines[0].rstrip()), PROMPT_RE.match(lines[-1].rstrip())
    if not (first and first.group("cmd") is not None and last and last.group("cmd") is None) or not cmd.words:
        return []
    if cmd.redirects:
        return _check_redirected(cmd, lines)
    if ASSIGN.match(cmd.words[0].text) or f.cwd is None:
        return []
    args = [expand(w, f.env, f.home) for w in cmd.words[1:]]
    if any(a is None for a in args):
        return []
    plain = [x for a in args if a is not None for x in a]
    body = [line.rstrip() for line in lines[1:-1]]
    name = cmd.words[0].text
    if name == "cat":
        return _check_cat(plain, body, f)
    if name in ("head", "tail"):
        return _check_head_tail(name, plain, body, f)
    if name == "echo" and any(q != "'" and "$" in t for w in cmd.words[1:] for q, t in w.parts):
        out = echo_output("echo", plain)
        if out is None or not out.endswith("\n"):
            return []
        return _compare("env_value", f"`{lines[0].split('#', 1)[-1].strip()}` prints the variables' values "
                        "this session set", out.split("\n")[:-1], body)
    if name == "ls":
        return _check_ls(plain, body, f)
    return []


def _compare(kind: str, message: str, expected: list[str], body: list[str]) -> list[Finding]:
    want = [line.expandtabs(8).rstrip() for line in expected]
    if want == body:
        return []
    shown = "\n".join(want)
    shown = shown if len(shown) <= 600 else shown[:600] + "\n…"
    found = "\n".join(body)
    return [(Contradiction(kind=kind, message=f"{message}; it must show exactly:\n{shown}",
                           expected="\n".join(want), found=found[:2000]), Fix(1, 1 + len(body), tuple(want)))]


def _known(f: ShellFacts, p: str) -> str | None:
    content = f.files.get(p)
    if content is None or not content.endswith("\n") or re.search(r"[\x00-\x08\x0b-\x1f\x7f]", content):
        return None
    return content


def _check_cat(args: list[str], body: list[str], f: ShellFacts) -> list[Finding]:
    flags = [a for a in args if a.startswith("-") and a != "-"]
    names = [a for a in args if a not in flags]
    if flags not in ([], ["-n"]) or not names or "-" in names:
        return []
    paths = [resolve_path(f, a) for a in names]
    if len(paths) == 1 and paths[0] in f.removed and paths[0] not in f.files:
        if any("No such file or directory" in line for line in body):
            return []
        error = f"cat: {names[0]}: No such file or directory"
        return [(Contradiction(kind="file_removed", expected=error, found="\n".join(body)[:2000],
                               message=f"{names[0]} was removed earlier in this session, so cat must print "
                                       f"'{error}'"), Fix(1, 1 + len(body), (error,)))]
    contents = [_known(f, p) for p in paths]
    if any(c is None for c in contents):
        return []
    expected = "".join(c or "" for c in contents).split("\n")[:-1]
    if flags:
        expected = [f"{i:6d}\t{line}" for i, line in enumerate(expected, 1)]
    return _compare("file_content", f"{', '.join(names)} was written in this session and not changed since",
                    expected, body)


def _check_head_tail(name: str, args: list[str], body: list[str], f: ShellFacts) -> list[Finding]:
    count, files, it = 10, [], iter(args)
    for a in it:
        m = re.fullmatch(r"-(?:n\s*)?(\d+)|--lines=(\d+)", a)
        if m:
            count = int(m.group(1) or m.group(2))
        elif a == "-n":
            value = next(it, "")
            if not value.isdigit():
                return []
            count = int(value)
        elif a.startswith("-"):
            return []
        else:
            files.append(a)
    content = _known(f, resolve_path(f, files[0])) if len(files) == 1 else None
    if content is None:
        return []
    rows = content.split("\n")[:-1]
    expected = rows[:count] if name == "head" else rows[max(0, len(rows) - count):] if count else []
    return _compare("file_content", f"{files[0]} was written in this session and not changed since", expected,
                    body)


def _check_redirected(cmd: Command, lines: list[str]) -> list[Finding]:
    """A stdout-only command whose output goes to a file shows only error lines between its prompts
    (``lines`` is a whole screen: echoed command first, bare prompt last)."""
    if cmd.words[0].text not in STDOUT_ONLY:
        return []
    ops = [op.lstrip("1") for op, _ in cmd.redirects]
    if not any(op in _TO_FILE for op in ops) or any(op.endswith("&") for op in ops):
        return []
    body = lines[1:-1]
    errors_too = any(op.startswith("&") for op in ops)
    kept = [] if errors_too else [line for line in body if ERROR_LINE.search(line)]
    if [line for line in body if line.strip()] == [line for line in kept if line.strip()]:
        return []
    found = "\n".join(line for line in body if line not in kept)
    but = "" if errors_too else " but errors"
    message = (f"`{cmd.words[0].text}` writes its output to a file here, so the screen shows nothing{but} "
               "before the next prompt")
    return [(Contradiction(kind="redirected_output", expected="\n".join(kept), found=found[:2000],
                           message=message), Fix(1, len(lines) - 1, tuple(kept)))]


def _check_ls(args: list[str], body: list[str], f: ShellFacts) -> list[Finding]:
    flags = [a for a in args if a.startswith("-")]
    dirs = [a for a in args if not a.startswith("-")]
    if flags not in ([], ["-1"]) or len(dirs) > 1:
        return []
    path = resolve_path(f, dirs[0]) if dirs else f.cwd or ""
    if path not in f.dirs:
        return _check_ls_partly_known(path, flags, body, f)
    names = sorted(n for n in f.dirs[path] if not n.startswith("."))
    if any(re.search(r"[\s'\"\\]", n) for n in names):
        return []
    shown = [t for line in body for t in (line.split() if not flags else [line.strip()]) if t]
    if sorted(shown) == names:
        return []
    rows = names if flags else (["  ".join(names)] if names else [])
    return [(Contradiction(kind="dir_listing", expected=" ".join(names), found=" ".join(shown),
                           message=f"every entry of {path} was created in this session, so ls must list "
                                   f"exactly: {' '.join(names) or '(nothing)'}"), Fix(1, 1 + len(body),
                                                                                      tuple(rows)))]


def _check_ls_partly_known(path: str, flags: list[str], body: list[str], f: ShellFacts) -> list[Finding]:
    """A directory the session did not create: its listing holds what the session created there
    (files it wrote with known content, directories it made) and nothing it removed; the rest is
    unknown. Files whose content is unknown may be one of two readings (``mv a b`` into a directory
    ``b`` or onto a file ``b``), so they are not required."""
    children = [*(p for p, content in f.files.items() if content is not None), *f.dirs]
    created = {posixpath.basename(p) for p in children if posixpath.dirname(p) == path}
    gone = {posixpath.basename(p) for p in f.removed if posixpath.dirname(p) == path and p not in f.files}
    created = {n for n in created if not n.startswith(".")}
    odd = any(re.search(r"[\s'\"\\]", n) for n in created | gone)
    if odd or any(re.search(r"[:/]$|^total ", x) for x in body):  # quoting, or not a plain listing
        return []
    shown = [t for line in body for t in (line.split() if not flags else [line.strip()]) if t]
    missing, extra = created - set(shown), gone & set(shown)
    if not missing and not extra:
        return []
    names = sorted((set(shown) - gone) | created)
    rows = names if flags else (["  ".join(names)] if names else [])
    what = "; ".join([*([f"created here in this session: {' '.join(sorted(missing))}"] if missing else []),
                      *([f"removed in this session: {' '.join(sorted(extra))}"] if extra else [])])
    message = f"ls of {path} must agree with the files this session changed there ({what})"
    found = Contradiction(kind="dir_listing", expected=" ".join(names), found=" ".join(shown),
                          message=message)
    return [(found, Fix(1, 1 + len(body), tuple(rows)))]

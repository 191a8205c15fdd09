"""Shell replay: one action's keystrokes run on a copy of the :class:`ShellFacts`.

Keystrokes (tmux key names included) are read by :mod:`.shell_reader` and each simple
command is applied: ``cd``/``pushd``/``popd``, ``export`` and assignments, ``echo``/``printf``/heredoc
writes, redirections and file-system commands. What cannot be followed (unknown programs, control
flow, line editing, nested shells) makes the facts forget instead of guess (:class:`Step`).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass

from agentworld.domains.terminal.shell_facts import (
    ShellFacts,
    apply_filesystem,
    invalidate,
    resolve_path,
    write_file,
)
from agentworld.domains.terminal.shell_reader import (
    ASSIGN,
    Command,
    Word,
    echo_output,
    expand,
    expand_text,
    parse_script,
)

PURE = frozenset(["cat", "ls", "grep", "egrep", "fgrep", "wc", "head", "tail", "sort", "uniq", "cut", "awk",
                  "diff", "cmp", "stat", "file", "echo", "printf", "pwd", "which", "type", "test", "[",
                  "[[", "true", "false", "env", "printenv", "id", "whoami", "hostname", "uname", "date",
                  "sleep", "md5sum", "sha1sum", "sha256sum", "base64", "xxd", "od", "nl", "tr", "basename",
                  "dirname", "realpath", "readlink", "du", "df", "ps", "free", "seq", "expr", "bc", "jq",
                  "tree", "history", "alias", "unalias", "set", "shopt", "command", "hash", "jobs", "wait",
                  "dirs", "umask", "locale", "tty", "clear", "rev", "fold", "column", "paste", "join",
                  "comm", "less", "more", "chmod", "chown", "chgrp", "ulimit", "kill", "timeout", "xargs"])
GIT_PURE = frozenset(["status", "log", "diff", "show", "branch", "config", "add", "commit", "rev-parse",
                      "tag", "remote", "blame", "shortlog", "describe", "ls-files", "grep", "reflog"])
SHELLS = frozenset(["bash", "sh", "zsh", "dash", "fish", "su", "ssh", "exit", "logout", "exec", "source",
                    ".", "eval", "chroot", "docker", "nsenter", "tmux", "screen", "sudo", "newgrp"])
_SPECIAL_KEYS = re.compile(r"^(?:C-[a-z\\\[\]]|M-.|Escape|Up|Down|Left|Right|Home|End|BSpace|Tab|DC|"
                           r"PageUp|PageDown|PPage|NPage|F\d+)$")
_SHELL_WORD = re.compile(r"(?:^|[\s;&|(])(?:bash|sh|zsh|su|sudo|ssh|exit|logout|exec|source|\.|eval|docker|"
                         r"chroot)(?=\s|$)")
_CD_WORD = re.compile(r"(?:^|[\s;&|(])(?:cd|pushd|popd|source|\.|eval)(?=\s|$)")


@dataclass(frozen=True)
class Step:
    """The replay of one action: the facts after it and what it left uncertain."""

    after: ShellFacts
    commands: list[Command]
    resync: bool
    """A nested shell, line editing or control flow: host/cwd are taken from the observed prompt."""
    executed: bool


def replay(action: str, facts: ShellFacts) -> Step:
    """Run the action's keystrokes on a copy of ``facts``.

    Input for a running program changes nothing; line editing and compound commands leave the
    cwd unknown; only a nested shell, ``ssh``, ``exit`` and the like may change host or user.
    """
    after = copy.deepcopy(facts)
    text, edited = _keys(action, after)
    if text is None:
        after.cwd = None
        return Step(after, [], False, False)
    if not facts.at_prompt and not facts.pending:
        return Step(after, [], False, False)
    exits = '"C-d"' in action and not facts.pending
    if edited:
        after.pending = ""
        invalidate(after, text, cwd=True)
        return Step(after, [], exits or _SHELL_WORD.search(text) is not None, False)
    script = parse_script(after.pending + text)
    if not script.complete:
        after.pending += text
        return Step(after, [], False, False)
    after.pending = script.rest
    if script.compound:
        invalidate(after, text, cwd=_CD_WORD.search(text) is not None)
        return Step(after, script.commands, _SHELL_WORD.search(text) is not None, True)
    resync = exits
    for cmd in script.commands:
        resync = _run(cmd, after) or resync
    return Step(after, script.commands, resync, True)


def _keys(action: str, facts: ShellFacts) -> tuple[str | None, bool]:
    """The keystroke text of ``action`` with tmux key names applied, and whether line editing made
    the typed command unknowable."""
    m = re.search(r"\*\*Action:\*\*\s*(?:```(?:json)?\s*(.*?)```|(.*))", action, re.S)
    try:
        steps = json.loads((m.group(1) or m.group(2) or "") if m else action)
    except ValueError:
        return None, True
    steps = [steps] if isinstance(steps, dict) else steps
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        return None, True
    text, edited = "", False
    for s in steps:
        keys = str(s.get("keystrokes") or "")
        if keys in ("C-c", "C-u"):
            text, facts.pending = "", ""
        elif keys in ("Enter", "C-m", "KPEnter"):
            text += "\n"
        elif _SPECIAL_KEYS.match(keys):
            edited = True
        else:
            text += keys
    return text, edited



_WRAPPERS = frozenset({"time", "nohup", "command", "builtin", "nice"})


def _run(cmd: Command, f: ShellFacts) -> bool:
    """Apply one simple command to ``f``; True when the cwd/host must come from the observed prompt."""
    words = list(cmd.words)
    k = 0
    while k < len(words) and ASSIGN.match(words[k].text) and words[k].parts[0][0] == "":
        k += 1
    if k == len(words):
        for w in words:
            _assign(f, w)
        _redirect(cmd, f, None)
        return False
    words = words[k:]
    while len(words) > 1 and words[0].text in _WRAPPERS:
        words = words[1:]
    name = words[0].text
    args = [expand(w, f.env, f.home) for w in words[1:]]
    plain = None if any(a is None for a in args) else [x for a in args if a is not None for x in a]
    if name in SHELLS:
        return _shell(name, plain, f)
    content: str | None = None
    if name in ("cd", "pushd", "popd"):
        _cd(name, plain, f)
    elif name in ("export", "declare", "typeset", "readonly", "local"):
        for w in words[1:]:
            if ASSIGN.match(w.text):
                _assign(f, w)
    elif name in ("unset", "read", "mapfile", "readarray", "let"):
        for w in words[1:]:
            f.env.pop(w.text.split("=")[0], None) if name != "unset" else f.env.update({w.text: ""})
    elif name in ("echo", "printf") and plain is not None:
        content = echo_output(name, plain)
    elif name in ("cat", "tee") and cmd.heredoc is not None:
        body, expands = cmd.heredoc
        content = expand_text(body, f.env) if expands else body
        if name == "tee" and plain is not None:
            for p in (a for a in plain if not a.startswith("-")):
                write_file(f, p, content, "-a" in plain)
    elif name == "cat" and plain and not cmd.pipe_in and not any(a.startswith("-") for a in plain):
        parts = [f.files.get(resolve_path(f, p)) for p in plain]
        content = None if any(p is None for p in parts) else "".join(p or "" for p in parts)
    elif name in ("touch", "rm", "rmdir", "mkdir", "mv", "cp", "ln") and plain is not None and f.cwd:
        apply_filesystem(name, plain, f)
    elif name in ("sed", "perl") and plain is not None and any(a.startswith("-i") for a in plain):
        for p in plain:
            if resolve_path(f, p) in f.files:
                f.files[resolve_path(f, p)] = None
    elif name == "git" and plain and plain[0] in GIT_PURE:
        pass
    elif name not in PURE or name in ("touch", "rm", "mkdir", "mv", "cp", "ln"):
        invalidate(f)
    _redirect(cmd, f, content if not cmd.pipe_in or name in ("echo", "printf") else None)
    return False


def _shell(name: str, args: list[str] | None, f: ShellFacts) -> bool:
    """Nested shells, ``exit``, ``source``: a script run by ``bash x.sh`` only changes files."""
    if name in ("bash", "sh", "zsh", "dash") and (args is None or any(not a.startswith("-") or a == "-c"
                                                                      for a in args)):
        invalidate(f)
        return False
    if name in ("source", ".", "eval"):
        f.env.clear()
    invalidate(f, cwd=True)
    return True


def _assign(f: ShellFacts, word: Word) -> None:
    name, _, _ = word.text.partition("=")
    head = len(name) + 1
    parts, skipped = [], 0
    for quote, text in word.parts:
        if skipped + len(text) <= head:
            skipped += len(text)
            continue
        parts.append((quote, text[max(0, head - skipped):]))
        skipped += len(text)
    value = expand(Word(tuple(parts)), f.env, f.home) if parts else [""]
    if value is None or len(value) > 1:
        f.env.pop(name, None)
    else:
        f.env[name] = value[0] if value else ""



def _cd(name: str, args: list[str] | None, f: ShellFacts) -> None:
    args = [a for a in args if a not in ("-L", "-P", "--")] if args is not None else None
    if args is None or f.cwd is None or len(args) > 1:
        f.cwd = None
        return
    if name == "popd":
        f.cwd = f.stack.pop(0) if f.stack and not args else (f.cwd if not args else None)
        return
    if name == "pushd":
        if not args:
            f.cwd, f.stack[:1] = (f.stack[0], [f.cwd]) if f.stack else (f.cwd, [])
            return
        f.stack.insert(0, f.cwd)
    target = f.home if not args else (f.oldpwd if args[0] == "-" else args[0])
    cwd = None if target is None or target.startswith(("-", "+")) else resolve_path(f, target)
    f.oldpwd, f.cwd = f.cwd, cwd



def _redirect(cmd: Command, f: ShellFacts, content: str | None) -> None:
    for op, word in cmd.redirects:
        fields = expand(word, f.env, f.home)
        if op.endswith("&") or op.startswith("<") or op == "":
            continue
        if fields is None or len(fields) != 1 or f.cwd is None:
            invalidate(f)
            continue
        stdout = op.lstrip("1") in (">", ">>", ">|", "&>", "&>>")
        write_file(f, fields[0], content if stdout and not cmd.pipe_out else None, op.endswith(">>"))


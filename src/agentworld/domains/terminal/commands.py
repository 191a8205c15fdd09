"""What a terminal session's own keystrokes wrote, and which commands compute from the session alone.

The rule tier calls such output *deterministic* content (the official judge prompts' first tier):
``cat notes.txt`` after writing it, or ``echo $((6*7))``, can only print one thing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEREDOC = re.compile(r"(?:cat|tee)\s*(?:>>?\s*(?P<f1>\S+)\s*)?<<-?\s*['\"]?(?P<tag>\w+)['\"]?"
                      r"(?:\s*>>?\s*(?P<f2>\S+))?[^\n]*\n(?P<body>.*?)\n(?P=tag)\s*$", re.S | re.M)
_ECHO = re.compile(r"\b(?:echo(?: -e)?|printf)\s+(?P<q>['\"]?)(?P<body>.*?)(?P=q)"
                   r"\s*>>?\s*(?P<file>[^\s;&|]+)")
COMPUTE_CMDS = frozenset({"echo", "printf", "expr", "bc", "seq", "pwd", "basename", "dirname", "true",
                          "false", "test", "cd", "export", "mkdir", "touch", "rm", "cp", "mv", "chmod", "ln"})
_NEUTRAL = frozenset({"for", "do", "done", "while", "until", "if", "then", "else", "elif", "fi", "time",
                      "!", "{", "}", "(", ")"})
READ_CMDS = frozenset({"cat", "head", "tail", "grep", "wc", "sort", "uniq", "cut", "awk", "sed", "nl",
                       "tr", "sha256sum", "md5sum", "sha1sum", "diff", "cmp", "base64", "xxd", "od"})


@dataclass(frozen=True)
class WrittenFiles:
    """Files the session's own keystrokes wrote (heredocs, ``echo … > f``), their lines, and the
    shell functions it defined (their output derives from the session, too)."""

    names: frozenset[str]
    lines: frozenset[str]
    commands: frozenset[str] = frozenset()


def written_files(keystrokes: list[str]) -> WrittenFiles:
    names: set[str] = set()
    lines: set[str] = set()
    commands: set[str] = set()
    for keys in keystrokes:
        commands.update(re.findall(r"(?:^|[;&\s])(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)\s*\{", keys))
        for m in _HEREDOC.finditer(keys):
            name = m.group("f1") or m.group("f2")
            if name:
                names.add(name.strip("'\""))
                lines.update(" ".join(x.split()) for x in m.group("body").splitlines() if x.strip())
        for m in _ECHO.finditer(keys):
            names.add(m.group("file").strip("'\""))
            body = m.group("body").replace("\\n", "\n")
            lines.update(" ".join(x.split()) for x in body.splitlines() if x.strip())
    return WrittenFiles(frozenset(names), frozenset(lines), frozenset(commands))


def command_is_deterministic(keystrokes: str, written: WrittenFiles) -> bool:
    """True if every simple command computes from its arguments or reads files the session wrote.

    ``echo $((6*7))``, ``python3 -c 'print(2**10)'`` and ``cat notes.txt`` (after writing it)
    qualify; ``ls``, ``pip list`` or ``cat /etc/os-release`` read the pre-existing environment.
    """
    commands = [c.strip() for c in re.split(r"&&|\|\||[;|\n]", keystrokes) if c.strip()]
    if not commands:
        return False
    for command in commands:
        words = command.split()
        while words and words[0] in _NEUTRAL - {"for"}:
            words = words[1:]
        if not words or words[0] in ("for", "select", "case") or "=" in words[0]:
            continue
        name = words[0].rsplit("/", 1)[-1]
        if name in COMPUTE_CMDS or name in written.commands or (name.startswith("python") and
                                                                 "-c" in words[1:2]):
            continue
        inner = re.match(r"(?:ba)?sh\s+-c\s+(['\"])(.*)\1\s*$", " ".join(words))
        if inner and command_is_deterministic(inner.group(2), written):
            continue
        args = [w.strip("'\"") for w in words[1:] if not w.startswith("-")]
        files = [a for a in args if "/" in a or "." in a]
        if name in READ_CMDS and (not files or all(f in written.names or f.rsplit("/", 1)[-1] in
                                                   written.names for f in files)):
            continue
        return False
    return True

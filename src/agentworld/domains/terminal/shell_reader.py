"""The shell reader: how typed shell text is read into simple commands and their words expanded.

:func:`parse_script` splits keystroke text into :class:`Command` objects (quotes, ``$(…)``,
redirections, heredocs, ``&&``/``;``/``|`` pipelines) and says when the shell still waits for input
or when control flow makes command-by-command replay impossible. :func:`expand` and
:func:`expand_text` expand words from known variables, and :func:`echo_output` and
:func:`printf_format` compute what ``echo``/``printf`` print. Each returns None rather than guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

Part = tuple[str, str]
"""``(quote, text)``: quote ``""`` (unquoted), ``"'"`` (literal) or ``'"'`` (double-quoted)."""


@dataclass(frozen=True)
class Word:
    parts: tuple[Part, ...]

    @property
    def text(self) -> str:
        return "".join(t for _, t in self.parts)


@dataclass
class Command:
    """One simple command: words, redirections (``(op, target)``), a heredoc ``(body, expands)``."""

    words: list[Word] = field(default_factory=list)
    redirects: list[tuple[str, Word]] = field(default_factory=list)
    heredoc: tuple[str, bool] | None = None
    pipe_in: bool = False
    pipe_out: bool = False


@dataclass(frozen=True)
class Script:
    commands: list[Command]
    complete: bool
    """False while the shell still waits for input (open quote, heredoc, trailing ``&&``/``|``/``\\``)."""
    compound: bool
    """Control flow, subshells, groups, functions or background jobs: not replayed command by command."""
    rest: str
    """Typed text after the last Enter."""


_COMPOUND_WORDS = frozenset(["if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done",
                             "case", "esac", "select", "function", "{", "}", "coproc"])
_INCOMPLETE = Script([], False, False, "")


def parse_script(text: str) -> Script:
    """Read the executed part of ``text`` (up to its last newline) into simple commands.

    >>> [w.text for w in parse_script("echo 'a b' > f.txt\\n").commands[0].words]
    ['echo', 'a b']
    """
    cut = text.rfind("\n") + 1
    src, rest = text[:cut], text[cut:]
    tokens: list[tuple[str, object]] = []
    parts: list[Part] = []
    buf = ""
    heredocs: list[tuple[int, str, bool, bool]] = []
    compound = False
    i, n = 0, len(src)

    def flush() -> None:
        nonlocal buf
        if buf:
            parts.append(("", buf))
            buf = ""
        if parts:
            tokens.append(("word", Word(tuple(parts))))
            parts.clear()

    while i < n:
        c = src[i]
        if c == "\\":
            if i + 1 >= n:
                return _INCOMPLETE
            if src[i + 1] != "\n":
                parts.extend([("", buf), ("'", src[i + 1])] if buf else [("'", src[i + 1])])
                buf = ""
            i += 2
        elif c == "'":
            j = src.find("'", i + 1)
            if j < 0:
                return _INCOMPLETE
            parts.extend([("", buf), ("'", src[i + 1:j])] if buf else [("'", src[i + 1:j])])
            buf, i = "", j + 1
        elif c == '"':
            if buf:
                parts.append(("", buf))
                buf = ""
            dq = _double_quoted(src, i)
            if dq is None:
                return _INCOMPLETE
            parts.extend(dq[0])
            i = dq[1]
        elif src.startswith("$(", i) or c == "`":
            j = _substitution_end(src, i)
            if j < 0:
                return _INCOMPLETE
            buf, i = buf + src[i:j], j
        elif c in " \t":
            flush()
            i += 1
        elif c == "#" and not buf and not parts:
            i = src.find("\n", i)
        elif c == "\n":
            flush()
            tokens.append(("op", "\n"))
            i += 1
            for index, tag, strip, quoted in heredocs:
                got = _heredoc_body(src, i, tag, strip)
                if got is None:
                    return _INCOMPLETE
                tokens[index] = ("heredoc", (got[0], not quoted))
                i = got[1]
            heredocs.clear()
        elif c in "<>" or src.startswith("&>", i):
            fd = buf if buf.isdigit() and not parts else ""
            if fd:
                buf = ""
            flush()
            m = re.match(r"<<<|<<-|<<|>>|>&|<&|>\||&>>|&>|>|<", src[i:])
            op = m.group(0) if m else c
            i += len(op)
            if op in ("<<", "<<-"):
                m = re.match(r"[ \t]*(['\"]?)([^\s'\";|&<>]+)\1", src[i:])
                if not m:
                    return _INCOMPLETE
                heredocs.append((len(tokens), m.group(2), op == "<<-", bool(m.group(1))))
                tokens.append(("heredoc", None))
                i += m.end()
            else:
                tokens.append(("redir", fd + op))
        elif c in ";|&()":
            flush()
            m = re.match(r"&&|\|\||;;|\|&|[;|&()]", src[i:])
            op = m.group(0) if m else c
            compound = compound or op in ("&", "(", ")", ";;")
            tokens.append(("op", op))
            i += len(op)
        else:
            buf += c
            i += 1
    flush()
    if _continues(tokens):
        return _INCOMPLETE
    commands = _group(tokens)
    compound = compound or any(c.words and c.words[0].text in _COMPOUND_WORDS for c in commands)
    return Script(commands, True, compound, rest)


def _double_quoted(src: str, i: int) -> tuple[list[Part], int] | None:
    """The parts of the ``"…"`` string opening at ``src[i]`` and the index after it; None while open."""
    n = len(src)
    parts: list[Part] = []
    j, seg = i + 1, ""
    while j < n and src[j] != '"':
        if src[j] == "\\" and j + 1 < n and src[j + 1] in '$`"\\\n':
            parts.extend([('"', seg)] if seg else [])
            parts.extend([("'", src[j + 1])] if src[j + 1] != "\n" else [])
            seg, j = "", j + 2
        else:
            seg, j = seg + src[j], j + 1
    if j >= n:
        return None
    parts.append(('"', seg))
    return parts, j + 1


def _heredoc_body(src: str, i: int, tag: str, strip: bool) -> tuple[str, int] | None:
    """The heredoc body starting at ``src[i]`` up to its ``tag`` line, and the index after that line."""
    body: list[str] = []
    while True:
        if i >= len(src):
            return None
        end = src.find("\n", i)
        line = src[i:end]
        i = end + 1
        if (line.lstrip("\t") if strip else line) == tag:
            break
        body.append(line.lstrip("\t") if strip else line)
    return ("\n".join(body) + "\n" if body else ""), i


def _continues(tokens: list[tuple[str, object]]) -> bool:
    """The command line ends in ``&&``/``||``/``|``: the shell waits for more input."""
    ops = [v for k, v in tokens if k == "op" and v != "\n"]
    last = next((v for k, v in reversed(tokens) if not (k == "op" and v == "\n")), None)
    return last in ("&&", "||", "|", "|&") or bool(ops and tokens and tokens[-1] == ("op", ops[-1]) and
                                                   ops[-1] in ("&&", "||", "|"))


def _substitution_end(src: str, i: int) -> int:
    if src[i] == "`":
        j = src.find("`", i + 1)
        return j + 1 if j >= 0 else -1
    depth = 0
    for j in range(i + 1, len(src)):
        depth += {"(": 1, ")": -1}.get(src[j], 0)
        if depth == 0:
            return j + 1
    return -1


def _group(tokens: list[tuple[str, object]]) -> list[Command]:
    commands: list[Command] = []
    cur, target, piped = Command(), "", False
    for kind, value in tokens:
        if kind == "word" and isinstance(value, Word):
            if target:
                cur.redirects.append((target, value))
                target = ""
            else:
                cur.words.append(value)
        elif kind == "redir" and isinstance(value, str):
            target = value
        elif kind == "heredoc" and isinstance(value, tuple):
            cur.heredoc = value
        elif kind == "op":
            if cur.words or cur.redirects or cur.heredoc:
                cur.pipe_out = value in ("|", "|&")
                commands.append(cur)
            piped = value in ("|", "|&")
            cur = Command(pipe_in=piped)
    if cur.words or cur.redirects or cur.heredoc:
        commands.append(cur)
    return commands


_VAR = re.compile(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*)|([{(0-9?$!#@*_-]))")


def expand_text(text: str, env: dict[str, str]) -> str | None:
    """``$VAR``/``${VAR}`` replaced from ``env``; None if anything is unknown (``$?``, ``$(…)``, unset)."""
    out, pos = [], 0
    for m in _VAR.finditer(text):
        name = m.group(1) or m.group(2)
        if name is None or name not in env:
            return None
        out += [text[pos:m.start()], env[name]]
        pos = m.end()
    out.append(text[pos:])
    return None if "`" in text else "".join(out)


def expand(word: Word, env: dict[str, str], home: str) -> list[str] | None:
    """The fields a word expands to (quotes removed, variables, ``~``); None when not certain."""
    value, split = "", False
    for index, (quote, text) in enumerate(word.parts):
        if quote == "'":
            value += text
            continue
        if quote == "" and index == 0 and (text == "~" or text.startswith("~/")):
            text = home + text[1:]
        if quote == "" and re.search(r"[*?\[]", text):
            return None
        got = expand_text(text, env)
        if got is None:
            return None
        if quote == "" and got != text:
            if got != " ".join(got.split()) and len(word.parts) > 1:
                return None
            split = True
        value += got
    if split and len(word.parts) == 1:
        return value.split()
    return [value]


def unescape_echo(text: str) -> str | None:
    r"""``echo -e`` escapes (``\n``, ``\t``, ``\\``); None for ``\c`` and octal/hex ones."""
    if re.search(r"\\[c0xu]", text):
        return None
    table = {"n": "\n", "t": "\t", "\\": "\\", "a": "\a", "r": "\r", "e": "\x1b", "v": "\v", "f": "\f",
             "b": "\b"}
    return re.sub(r"\\(.)", lambda m: table.get(m.group(1), m.group(0)), text)


def printf_format(fmt: str, args: list[str]) -> str | None:
    """What ``printf fmt args…`` prints, for ``%s``/``%d``/``%b``/``%%`` formats; None otherwise."""
    specs = list(re.finditer(r"%(-?\d*)([a-zA-Z%])", fmt))
    if any(m.group(2) not in "sdb%" for m in specs):
        return None
    body = unescape_echo(fmt)
    if body is None:
        return None
    takes = sum(m.group(2) != "%" for m in specs)
    out, rest = "", list(args)
    while True:
        def one(m: re.Match[str]) -> str:
            kind, width = m.group(2), m.group(1)
            if kind == "%":
                return "%"
            arg = rest.pop(0) if rest else ("0" if kind == "d" else "")
            text = str(int(arg)) if kind == "d" else (unescape_echo(arg) or "" if kind == "b" else arg)
            return text.ljust(-int(width)) if width.startswith("-") else text.rjust(int(width or 0))
        try:
            out += re.sub(r"%(-?\d*)([sdb%])", one, body)
        except ValueError:
            return None
        if not rest or not takes:
            return out


ASSIGN = re.compile(r"^([A-Za-z_]\w*)=")
"""A ``NAME=value`` word."""


def echo_output(name: str, args: list[str]) -> str | None:
    if name == "printf":
        args = args[2:] if args[:1] == ["-v"] else args
        return printf_format(args[0], args[1:]) if args and not args[0].startswith("-") else None
    newline, escapes = "\n", False
    while args and re.fullmatch(r"-[neE]+", args[0]):
        newline = "" if "n" in args[0] else newline
        escapes = "e" in args[0] or (escapes and "E" not in args[0])
        args = args[1:]
    text = unescape_echo(" ".join(args)) if escapes else " ".join(args)
    return None if text is None else text + newline

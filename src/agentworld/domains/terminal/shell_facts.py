"""Shell facts: what a shell session established (user, host, cwd, variables, files, directories).

:class:`ShellFacts` holds facts that are certain, ``None`` marking what is unknown. The helpers
here resolve paths, apply file-system commands (``touch``/``rm``/``mv``/``cp``/``mkdir``) and
forget whatever an unreadable command or an error on screen may have changed.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field


@dataclass
class ShellFacts:
    """What the session established; ``None`` means unknown (a file that exists, content unknown)."""

    user: str | None = None
    host: str | None = None
    cwd: str | None = None
    oldpwd: str | None = None
    stack: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str | None] = field(default_factory=dict)
    removed: set[str] = field(default_factory=set)
    dirs: dict[str, set[str]] = field(default_factory=dict)
    """Directories whose whole content the session created: path → entry names."""
    at_prompt: bool = True
    pending: str = ""
    """Typed but not executed text (no Enter yet, or an unfinished quote/heredoc)."""

    @property
    def home(self) -> str:
        if "HOME" in self.env:
            return self.env["HOME"]
        return "/root" if self.user in (None, "root") else f"/home/{self.user}"


def absolute_path(cwd: str, home: str) -> str:
    if cwd == "~" or cwd.startswith("~/"):
        cwd = home + cwd[1:]
    return posixpath.normpath(cwd) if cwd.startswith("/") else cwd


def display_path(cwd: str, home: str) -> str:
    if cwd == home or cwd.startswith(home.rstrip("/") + "/"):
        return "~" + cwd[len(home):]
    return cwd



def resolve_path(f: ShellFacts, p: str) -> str:
    return posixpath.normpath(posixpath.join(f.cwd or "/", p))


def known_absent(f: ShellFacts, p: str) -> bool:
    """Known not to exist: removed this session, or missing from a directory whose content is known."""
    parent, base = posixpath.split(p)
    return p in f.removed or (parent in f.dirs and base not in f.dirs[parent])


def write_file(f: ShellFacts, target: str, content: str | None, append: bool) -> None:
    p = resolve_path(f, target)
    if p.startswith(("/dev/", "/proc/")) or p in f.dirs:
        return
    if append:
        old = "" if known_absent(f, p) else f.files.get(p)
        content = None if old is None or content is None else old + content
    f.files[p] = content
    _enter(f, p)


def _enter(f: ShellFacts, p: str) -> None:
    f.removed.discard(p)
    parent, base = posixpath.split(p)
    if parent in f.dirs:
        f.dirs[parent].add(base)



def apply_filesystem(name: str, args: list[str], f: ShellFacts) -> None:
    flags = [a for a in args if a.startswith("-")]
    paths = [resolve_path(f, a) for a in args if not a.startswith("-")]
    if any(fl in ("-t", "--target-directory", "-d", "-r", "--reference") for fl in flags) and name in (
            "mv", "cp", "touch"):
        invalidate(f)
        return
    if name == "touch":
        for p in paths:
            if p not in f.files:
                f.files[p] = "" if known_absent(f, p) else None
            _enter(f, p)
    elif name in ("rm", "rmdir"):
        for p in paths:
            _drop(f, p)
            f.removed.add(p)
    elif name == "mkdir":
        for p in paths:
            _mkdir(f, p, "-p" in flags or "--parents" in flags)
    elif len(paths) >= 2:
        dest = paths[-1]
        for src in paths[:-1]:
            into = dest in f.dirs or args[-1].endswith("/") or len(paths) > 2
            target = posixpath.join(dest, posixpath.basename(src)) if into else dest
            if not into and not (dest in f.files or known_absent(f, dest)):
                f.files[dest] = f.files[posixpath.join(dest, posixpath.basename(src))] = None
                if name == "mv":  # a file or into a directory: the source is gone either way
                    _drop(f, src)
                    f.removed.add(src)
                continue
            _move(f, src, target, keep=name != "mv")


def _drop(f: ShellFacts, p: str) -> None:
    for q in [q for q in f.files if q == p or q.startswith(p + "/")]:
        del f.files[q]
        f.removed.add(q)
    for q in [q for q in f.dirs if q == p or q.startswith(p + "/")]:
        del f.dirs[q]
    parent, base = posixpath.split(p)
    f.dirs.get(parent, set()).discard(base)


def _move(f: ShellFacts, src: str, dst: str, keep: bool) -> None:
    moved = {q: c for q, c in f.files.items() if q == src or q.startswith(src + "/")}
    if not moved and not known_absent(f, src):
        f.files[dst] = None
    for q, c in moved.items():
        f.files[dst + q[len(src):]] = c
        _enter(f, dst + q[len(src):])
    if src in f.dirs:
        f.dirs[dst] = set(f.dirs[src])
    if not keep:
        _drop(f, src)
        f.removed.add(src)
    _enter(f, dst)


def _mkdir(f: ShellFacts, p: str, parents: bool) -> None:
    chain = [p] if not parents else [q for q in _ancestors(p)]
    for q in chain:
        parent, base = posixpath.split(q)
        if q not in f.dirs and (not parents or known_absent(f, q)):
            f.dirs[q] = set()
            _enter(f, q)
        elif parent in f.dirs:
            f.dirs[parent].add(base)


def _ancestors(p: str) -> list[str]:
    out = []
    while p not in ("/", ""):
        out.append(p)
        p = posixpath.dirname(p)
    return out[::-1]


def invalidate(f: ShellFacts, text: str | None = None, cwd: bool = False) -> None:
    """Forget what an unreadable command may have changed: file contents, listings, (cwd, variables)."""
    f.files = dict.fromkeys(f.files)
    f.removed.clear()
    f.dirs.clear()
    if text is not None:
        for name in [n for n in f.env if re.search(rf"\b{n}\b", text)]:
            del f.env[name]
    if cwd:
        f.cwd = None


def forget_changes(before: ShellFacts, after: ShellFacts) -> None:
    """An error on screen: the files this action touched are unknown rather than as replayed."""
    missing = object()
    for p in set(before.files) | set(after.files) | before.removed | after.removed:
        if before.files.get(p, missing) != after.files.get(p, missing) or (p in before.removed) != (
                p in after.removed):
            after.files.pop(p, None)
            after.removed.discard(p)
            after.dirs.pop(posixpath.dirname(p), None)
    for d in [d for d in after.dirs if before.dirs.get(d) != after.dirs[d]]:
        after.dirs.pop(d, None)


"""Reading the pages of a ``--docs`` folder safely: which files count, and how their bytes become text.

Why: the folder is user input. One page in UTF-16 or with a stray Latin-1 byte used to raise
``UnicodeDecodeError`` deep inside lxml and lose the whole index; a symlink could pull a file from
outside the folder into the index (and into recordings); a FIFO named ``*.html`` hung the recorder.
Each page is now decoded by its byte-order mark or declared charset, falls back to UTF-8 with
replacement characters, and every page left out or decoded lossily is reported by name, so one bad
page costs that page only.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_PAGE_BYTES = 4_000_000
"""Bigger files are skipped: a hostile folder must not exhaust memory."""

_BOMS = (  # UTF-32 first: its little-endian mark starts with UTF-16's
    (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
)
_DECLARED = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)"""
                       rb"""|<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_SNIFF_BYTES = 4096
"""Where a charset declaration is looked for (the HTML standard's prescan reads 1,024 bytes; pages
with long heads declare later)."""


@dataclass(frozen=True)
class PageIssue:
    """A page left out of the index (``skipped``) or indexed with replacement characters."""

    path: str
    reason: str
    skipped: bool


def declared_encoding(raw: bytes) -> str | None:
    """The page's encoding from its byte-order mark, else its ``<meta charset>`` / XML declaration,
    else a guess of BOM-less UTF-16 from NUL bytes around ASCII ``<``; ``None`` when nothing says."""
    for bom, name in _BOMS:
        if raw.startswith(bom):
            return name
    if raw[:2] == b"<\x00":
        return "utf-16-le"
    if raw[:2] == b"\x00<":
        return "utf-16-be"
    match = _DECLARED.search(raw[:_SNIFF_BYTES])
    if match is None:
        return None
    name = (match.group(1) or match.group(2)).decode("ascii").lower()
    try:
        codec = codecs.lookup(name).name
    except LookupError:
        return None
    # A declared UTF-16/32 on ASCII-compatible bytes is a lie (the HTML standard reads it as UTF-8).
    return None if codec.startswith(("utf-16", "utf-32")) else codec


def decode_page(raw: bytes) -> tuple[str, bool]:
    """``(text, lossy)``: ``raw`` decoded by :func:`declared_encoding` (default UTF-8); ``lossy`` when
    the bytes did not fit that encoding and undecodable bytes became U+FFFD."""
    encoding = declared_encoding(raw) or "utf-8"
    try:
        return raw.decode(encoding), False
    except UnicodeDecodeError:
        return raw.decode(encoding, errors="replace"), True


def html_files(root: Path) -> Iterator[tuple[str, Path, PageIssue | None]]:
    """``(relative path, file to read, why it is skipped)`` of every ``*.html`` file under ``root``, in
    sorted path order.

    Hidden (``.``) and Sphinx-internal (``_``) folders and files are not pages. Symlinked folders are
    not entered; a symlinked page is read only when it resolves inside ``root``; only regular files of
    at most :data:`MAX_PAGE_BYTES` are read (a FIFO would block, a device would never end).
    """
    base = root.resolve()
    found: list[Path] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        found.extend(Path(folder, f) for f in files if f.endswith(".html") and not f.startswith((".", "_")))
    for file in sorted(found):
        rel = file.relative_to(root).as_posix()
        try:
            target = file.resolve(strict=True)
            info = target.stat()
        except (OSError, RuntimeError) as exc:  # a dangling link or a symlink loop
            yield rel, file, PageIssue(rel, f"unreadable ({exc.__class__.__name__})", True)
            continue
        if not target.is_relative_to(base):
            yield rel, file, PageIssue(rel, "a symlink out of the folder", True)
        elif not stat.S_ISREG(info.st_mode):
            yield rel, file, PageIssue(rel, "not a regular file", True)
        elif info.st_size > MAX_PAGE_BYTES:
            yield rel, file, PageIssue(rel, f"over {MAX_PAGE_BYTES:,} bytes", True)
        else:
            yield rel, target, None


def read_page(path: Path) -> bytes:
    """At most :data:`MAX_PAGE_BYTES` + 1 bytes of ``path`` (a file that grew since it was listed
    still cannot exhaust memory)."""
    with open(path, "rb") as fh:
        return fh.read(MAX_PAGE_BYTES + 1)

"""A local BM25 search engine over a folder of HTML pages (offline stand-in for the web).

Why: a search world model has to be scored against real search results, and real search needs the
network. A real document collection indexed locally (the Python documentation from the Debian
package ``python3-doc``) gives real rankings, titles, URLs, snippets and page texts, reproducibly
and offline. Each HTML file gets a stable URL (``base_url`` + its path relative to the folder); pages
are reduced to Markdown-like text (lxml parses them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld.envs.search_pages import MAX_PAGE_BYTES, PageIssue, decode_page, html_files, read_page
from agentworld.errors import AgentWorldError

PYTHON_DOCS_DIRS = (Path("/usr/share/doc/python3/html"), Path("/usr/share/doc/python3-doc/html"))
"""Where Debian's ``python3-doc`` installs the Python documentation."""
PYTHON_DOCS_URL = "https://docs.python.org/3/"

_WORD_RE = re.compile(r"(?u)\b\w\w+\b")
_SPACE = re.compile(r"\s+")
_SKIP_TAGS = {"script", "style", "head", "nav", "footer", "noscript", "template", "svg"}
_SKIP_CLASSES = {"sphinxsidebar", "related", "footer", "headerlink", "navigation", "mobile-nav"}
_BLOCK = {"p", "div", "section", "article", "table", "ul", "ol", "dl", "blockquote", "h1", "h2", "h3", "h4",
          "h5", "h6", "pre", "hr", "main", "body"}
_LINE = {"li", "tr", "dt", "dd", "br"}


class SearchIndexError(AgentWorldError):
    """The document folder is missing or holds no readable HTML pages, or the search extra is missing."""


def _need(module: str) -> None:
    """Import ``module`` or say which extra brings it (a clear error instead of a traceback)."""
    try:
        __import__(module)
    except ImportError:
        raise SearchIndexError(f"the search index needs {module}: pip install 'agentworld[search]'") from None


class _Text:
    """HTML → Markdown-like text: headings as ``#``, list items as ``- ``, cells joined by `` | ``."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pre = self.item = self.cell = 0

    def data(self, data: str | None) -> None:
        if not data:
            return
        if not self.pre:
            data = _SPACE.sub(" ", data)
            if not self.parts or self.parts[-1].endswith(("\n", "- ", "| ")):
                data = data.lstrip()
        if data:
            self.parts.append(data)

    def element(self, el: Any) -> None:
        tag = el.tag
        if isinstance(tag, str) and tag not in _SKIP_TAGS:
            cls = el.get("class")
            if not cls or not _SKIP_CLASSES.intersection(cls.split()):
                self.open(tag)
                self.data(el.text)
                for child in el:
                    self.element(child)
                self.close(tag)
        self.data(el.tail)

    def open(self, tag: str) -> None:
        if tag in _BLOCK and self.cell:
            pass  # a table row stays on one line
        elif tag in _BLOCK and self.parts and self.parts[-1] in ("- ", "| "):
            pass  # a paragraph that opens a list item stays on the marker's line
        elif tag in _BLOCK:
            self.parts.append("\n" if self.item else "\n\n")  # in a list item: a continuation line
        elif tag in _LINE:
            self.parts.append("\n")
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.parts.append("#" * int(tag[1]) + " ")
        elif tag == "li":
            self.parts.append("- ")
            self.item += 1
        elif tag in ("td", "th"):
            self.parts.append("| ")
            self.cell += 1
        elif tag == "pre":
            self.pre += 1

    def close(self, tag: str) -> None:
        if tag == "pre":
            self.pre -= 1
        elif tag == "li":
            self.item -= 1
        elif tag in ("td", "th"):
            self.cell -= 1
        if tag in _BLOCK and not self.item and not self.cell:
            self.parts.append("\n\n")
        elif (tag in _BLOCK and self.cell) or tag in ("td", "th"):
            if self.parts and not self.parts[-1].endswith(" "):
                self.parts.append(" ")
        elif tag == "tr":
            self.parts.append("|")


def html_to_text(html: str | bytes) -> tuple[str, str]:
    """``(title, text)`` of an HTML page: readable text without scripts, navigation or sidebars.

    lxml's C parser builds the tree (the pure-Python :mod:`html.parser` took over a minute for the
    Python documentation); a page that does not parse counts as empty. Bytes are decoded first by
    :func:`~agentworld.envs.search_pages.decode_page` (BOM, declared charset, else UTF-8 with
    replacement), so lxml always gets valid UTF-8 and never raises while the tree is walked.
    """
    import lxml.etree

    raw = (html if isinstance(html, str) else decode_page(html)[0]).encode("utf-8", errors="replace")
    try:
        root = lxml.etree.fromstring(raw, lxml.etree.HTMLParser(encoding="utf-8"))
    except (lxml.etree.ParserError, lxml.etree.XMLSyntaxError, ValueError):
        return "", ""
    if root is None:
        return "", ""
    title_el = root.find(".//title")
    title = " ".join("".join(title_el.itertext()).split()) if title_el is not None else ""
    body = root.find("body")
    walker = _Text()
    if body is not None:
        walker.element(body)
    lines = [line.rstrip() for line in "".join(walker.parts).splitlines()]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(line if line.strip() else "" for line in lines)).strip()
    return title, text


def tokens(text: str) -> list[str]:
    return _WORD_RE.findall(text.lower())


@dataclass(frozen=True)
class Document:
    url: str
    title: str
    text: str


@dataclass(frozen=True)
class Hit:
    document: Document
    score: float


def default_docs_dir() -> Path | None:
    """The installed Python documentation, if ``python3-doc`` is installed."""
    return next((d for d in PYTHON_DOCS_DIRS if d.is_dir()), None)


def scan_documents(folder: str | Path, base_url: str = PYTHON_DOCS_URL
                   ) -> tuple[list[Document], list[PageIssue]]:
    """Every readable ``*.html`` page under ``folder`` (sorted by path, so URLs and ranks are
    reproducible), and the pages skipped or decoded lossily, by name (see :mod:`.search_pages`)."""
    _need("lxml")
    root = Path(folder)
    if not root.is_dir():
        raise SearchIndexError(f"{root}: no such document folder")
    base = base_url if base_url.endswith("/") else base_url + "/"
    docs: list[Document] = []
    issues: list[PageIssue] = []
    for rel, file, issue in html_files(root):
        if issue is not None:
            issues.append(issue)
            continue
        try:
            raw = read_page(file)
        except OSError as exc:
            issues.append(PageIssue(rel, f"unreadable ({exc.strerror or exc.__class__.__name__})", True))
            continue
        if len(raw) > MAX_PAGE_BYTES:
            issues.append(PageIssue(rel, f"over {MAX_PAGE_BYTES:,} bytes", True))
            continue
        page, lossy = decode_page(raw)
        title, text = html_to_text(page)
        if not text:
            issues.append(PageIssue(rel, "no text", True))
            continue
        if lossy:
            issues.append(PageIssue(rel, "not valid in its encoding: undecodable bytes replaced", False))
        docs.append(Document(url=base + rel, title=title or Path(rel).stem, text=text))
    if not docs:
        raise SearchIndexError(f"{root}: holds no readable *.html pages")
    return docs, issues


def load_documents(folder: str | Path, base_url: str = PYTHON_DOCS_URL) -> list[Document]:
    """The pages :func:`scan_documents` keeps."""
    return scan_documents(folder, base_url)[0]


class SearchIndex:
    """BM25 (``bm25s``) over page titles and texts; titles count twice, as engines weight them up."""

    def __init__(self, documents: list[Document], issues: list[PageIssue] | None = None) -> None:
        _need("bm25s")
        import bm25s

        self.documents = list(documents)
        self.issues: tuple[PageIssue, ...] = tuple(issues or ())
        """Pages of the folder skipped or decoded lossily (a recorder warns about them by name)."""
        self.by_url = {d.url: d for d in self.documents}
        corpus = [tokens(f"{d.title} {d.title} {d.text}") for d in self.documents]
        self._retriever: Any = bm25s.BM25()
        self._retriever.index(corpus, show_progress=False)

    @classmethod
    def from_folder(cls, folder: str | Path, base_url: str = PYTHON_DOCS_URL) -> SearchIndex:
        return cls(*scan_documents(folder, base_url))

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """The best ``k`` pages with a positive score; ties keep folder order."""
        words = tokens(query)
        if not words:
            return []
        vocab = self._retriever.vocab_dict
        known = [w for w in words if w in vocab]
        if not known:
            return []
        ids, scores = self._retriever.retrieve([known], k=min(k, len(self.documents)), show_progress=False)
        ranked = sorted(((float(s), int(i)) for i, s in zip(ids[0], scores[0], strict=True) if s > 0),
                        key=lambda pair: (-pair[0], pair[1]))
        return [Hit(self.documents[i], score) for score, i in ranked]


def snippet(text: str, query: str, width: int = 200) -> str:
    """The passage of ``text`` that holds the most query words, cut to about ``width`` characters."""
    wanted = set(tokens(query))
    best, best_score = "", -1
    for line in text.splitlines():
        body = line.lstrip("#- |").strip()
        if not body:
            continue
        score = 2 * len(wanted & set(tokens(body))) + (not line.startswith("#"))
        if score > best_score:
            best, best_score = body, score
    if len(best) <= width:
        return best
    lower = best.lower()
    first = min((p for w in wanted if (p := lower.find(w)) >= 0), default=0)
    start = 0 if first < width // 3 else best.rfind(" ", 0, first - width // 4) + 1
    cut = best[start:start + width]
    cut = cut[:cut.rfind(" ")] if " " in cut else cut
    return ("..." if start else "") + cut + " ..."


_STOP = frozenset(["the", "and", "for", "with", "how", "what", "which", "when", "where", "does", "from",
                   "into", "that", "this", "are", "can", "use", "using", "find", "get", "about", "its"])


def relevant_sections(text: str, goal: str, budget: int = 3000) -> list[str]:
    """The sections of a page (split at its headings) that best answer ``goal``, in page order.

    Why: a reader given a goal returns the evidence, not the whole page (the official search prompt's
    extractor "with a goal"). Sections are ranked by how many distinct goal words they hold (then by
    how often), and kept, in page order, until ``budget`` characters are used; one section longer than
    the budget is cut at a line end. Empty when no section holds a goal word.
    """
    wanted = {w for w in tokens(goal) if w not in _STOP and len(w) > 2}
    sections: list[str] = []
    for line in text.splitlines():
        if line.startswith("#") or not sections:
            sections.append(line)
        else:
            sections[-1] += "\n" + line
    scored = []
    for i, section in enumerate(sections):
        words = tokens(section)
        hits = wanted & set(words)
        if hits:
            scored.append((-len(hits), -sum(w in wanted for w in words) / (1 + len(words)) ** 0.5, i))
    chosen: list[int] = []
    used = 0
    for *_, i in sorted(scored):
        size = len(sections[i].strip())
        if used + size > budget and chosen:
            continue
        chosen.append(i)
        used += size
        if used >= budget:
            break
    out = []
    for i in sorted(chosen):
        body = sections[i].strip()
        if len(body) > budget:
            body = body[:budget].rsplit("\n", 1)[0] + "\n[...]"
        out.append(body)
    return out

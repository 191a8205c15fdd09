"""How every agentworld report looks: one HTML page, one HTML table, one text table, one progress bar.

The eval run report, ``eval compare``, ``eval probes``, ``eval closed-loop``, the synth check report
and ``data stats`` all render through these few functions, so they read alike and escape alike.
Every value put into a page goes through :func:`escape` unless it is an :class:`Html` fragment, which
a caller builds only from escaped parts: sample ids, labels and observations come from files someone
else may have written. Pages have no external assets (no CDN, no fonts), so they work offline.

>>> html_table(["run", "score"], [["<b>", 1.5]])
'<table class="t"><tr><th>run</th><th>score</th></tr><tr><td>&lt;b&gt;</td><td>1.5</td></tr></table>'
>>> text_table(["domain", "n"], [["all", "12"]])
['domain   n', 'all     12']
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, ProgressColumn

MARKER = "aw-report"
"""Class of every report page's ``<body>`` (and its header): what the tests look for."""


class Html(str):
    """A fragment of markup whose data parts were escaped already; tables and pages insert it as is."""


def escape(value: object) -> str:
    """``value`` as text safe inside an element or a quoted attribute (``&<>"'`` escaped)."""
    return html.escape(str(value), quote=True)


def _cell(value: object) -> str:
    return value if isinstance(value, Html) else escape(value)


CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
main{padding:0 24px 24px}header.aw-report{background:#fff;border-bottom:1px solid #ddd;padding:14px 24px;
margin-bottom:8px}header.aw-report .kind{color:#4e79a7;font-size:12px;font-weight:600;letter-spacing:.05em;
text-transform:uppercase}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.meta{color:#555}.meta b{color:#222}
.card{display:inline-block;box-sizing:border-box;max-width:100%;background:#fff;border:1px solid #ddd;
border-radius:6px;padding:12px;overflow-x:auto}
table.t{border-collapse:collapse;background:#fff;margin:4px 0}table.t th,table.t td{border:1px solid #ddd;
padding:4px 8px;text-align:right;vertical-align:top}table.t th:first-child,table.t td:first-child,
table.t .l{text-align:left}table.t th{background:#f0f0f0}table.t ul{margin:0;padding-left:18px}
tr.bad td.outcome{color:#a00}tr.good td.outcome{color:#070}
.big{font-size:20px;font-weight:600}.note{color:#666;font-size:12px}
details.s{background:#fff;border:1px solid #ddd;border-radius:6px;margin:6px 0}
details.s summary{cursor:pointer;padding:6px 10px;font-family:ui-monospace,monospace}
.badge{display:inline-block;border-radius:3px;padding:0 5px;margin-left:6px;font-size:12px;color:#fff}
.b-fail{background:#c0392b}.b-trunc{background:#d68910}.b-ok{background:#27ae60}.b-dom{background:#666}
.b-score{background:#4e79a7}
table.d{width:100%;border-collapse:collapse;table-layout:fixed;font:12px/1.35 ui-monospace,monospace}
table.d td{vertical-align:top;white-space:pre-wrap;word-break:break-all;padding:0 6px;
border-left:1px solid #eee}
table.d th{text-align:left;font:600 12px system-ui;padding:4px 6px;background:#f4f4f4}
td.del{background:#fde8e8}td.ins{background:#e6f6e6}td.chg{background:#fff6dc}
mark.x{background:#f5b041;color:#000}pre{white-space:pre-wrap;word-break:break-all}
.filters{position:sticky;top:0;background:#fafafa;padding:8px 0;z-index:1}
.filters input,.filters select{padding:4px;margin-right:8px}.filters input[type=number]{width:6em}
footer.aw-report{color:#888;font-size:12px;padding:12px 24px}
"""

FILTER_JS = """
function applyFilter(){var g=function(i){return document.getElementById(i);},q=g('q').value.toLowerCase(),
d=g('dom').value,f=g('onlyfail'),b=g('below'),x=b&&b.value!==''?parseFloat(b.value):NaN,n=0;
document.querySelectorAll('details.s').forEach(function(el){var s=parseFloat(el.dataset.score),
ok=(!d||el.dataset.domain===d)&&(!f||!f.checked||el.dataset.problem==='1')&&
(isNaN(x)||isNaN(s)||s<x)&&(!q||el.textContent.toLowerCase().indexOf(q)>=0);
el.style.display=ok?'':'none';if(ok)n++;});g('shown').textContent=n;}
"""
"""Filters the ``<details class="s">`` items of a page by text, domain, ``data-problem`` (the "only
failures" box) and ``data-score`` below a threshold (an item without a score always passes it)."""


def filter_bar(domains: Iterable[str], *, below: str | None = None, only_failures: bool = False) -> Html:
    """The sticky filter controls that :data:`FILTER_JS` reads.

    Args:
        domains: the choices of the domain menu.
        below: label of a numeric "score below" input, or None for none.
        only_failures: add the "only failures" check box (for pass/fail items).
    """
    options = "".join(f'<option value="{escape(d)}">{escape(d)}</option>' for d in domains)
    parts = ['<div class="filters"><input id="q" placeholder="filter text…" oninput="applyFilter()">',
             '<select id="dom" onchange="applyFilter()"><option value="">all domains</option>'
             f"{options}</select>"]
    if below is not None:
        parts.append(f'<label>{escape(below)} below <input id="below" type="number" step="any" '
                     'placeholder="any" oninput="applyFilter()"></label>')
    if only_failures:
        parts.append('<label><input type="checkbox" id="onlyfail" onchange="applyFilter()"> only failures'
                     "</label>")
    return Html("".join(parts) + "</div>")


def html_table(head: Sequence[object], rows: Iterable[Sequence[object]], *, left: Iterable[int] = (),
               row_classes: Sequence[str] | None = None,
               cell_classes: Mapping[int, str] | None = None) -> Html:
    """A ``<table class="t">``: numbers right-aligned, the first column and the ``left`` ones left.

    Cells are escaped unless they are :class:`Html`. ``row_classes`` gives each body row a class,
    ``cell_classes`` a class to the cells of some columns (by index).
    """
    lefts, named = set(left), cell_classes or {}
    classes = {i: " ".join(c for c in ("l" if i in lefts else "", named.get(i, "")) if c)
               for i in range(len(head))}

    def attr(i: int) -> str:
        return f' class="{escape(classes[i])}"' if classes.get(i) else ""

    out = ['<table class="t"><tr>', *(f"<th{attr(i)}>{_cell(h)}</th>" for i, h in enumerate(head)), "</tr>"]
    for n, row in enumerate(rows):
        cls = f' class="{escape(row_classes[n])}"' if row_classes is not None and row_classes[n] else ""
        cells = "".join(f"<td{attr(i)}>{_cell(c)}</td>" for i, c in enumerate(row))
        out.append(f"<tr{cls}>{cells}</tr>")
    return Html("".join(out) + "</table>")


def page(kind: str, title: str, body: Iterable[str], *, meta: Sequence[tuple[str, object]] = (),
         script: str = "", stamp: bool = True) -> str:
    """A whole self-contained report page: head, the shared CSS, a header, ``body``, a footer.

    Args:
        kind: what report this is (``eval report``, ``synth check`` …), shown above the title and
            written into ``<body data-report>``.
        title: the page's heading (escaped).
        body: fragments of markup, in order (built from escaped parts).
        meta: ``(label, value)`` pairs for the line under the title; values escaped unless :class:`Html`.
        script: inline JavaScript for the page (none by default: no ``<script>`` element at all).
        stamp: add "written <local time>" to the footer.
    """
    line = " · ".join(f"<b>{escape(k)}</b> {_cell(v)}" for k, v in meta)
    written = f"written {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime())} · " if stamp else ""
    return ('<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>agentworld {escape(kind)} — {escape(title)}</title><style>{CSS}</style>"
            + (f"<script>{script}</script>" if script else "")
            + f'</head><body class="{MARKER}" data-report="{escape(kind)}"><header class="{MARKER}">'
            f'<div class="kind">agentworld {escape(kind)}</div><h1>{escape(title)}</h1>'
            + (f'<div class="meta">{line}</div>' if line else "")
            + f'</header><main>{"".join(body)}</main><footer class="{MARKER}">{written}'
            "self-contained page, no external assets</footer></body></html>\n")


def text_table(head: Sequence[object], rows: Iterable[Sequence[object]], *, title: str | None = None,
               left: int = 1) -> list[str]:
    """A table as aligned text lines, as wide as its content (nothing is ever cut), for pipes and CI logs.

    The first ``left`` columns are left-aligned, the others (numbers) right-aligned.
    """
    table = [[str(c) for c in head], *([str(c) for c in row] for row in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i < left else c.rjust(w)
                       for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip() for row in table]
    return [*([title] if title else []), *lines]


def progress(console: Console | None = None, *extra: ProgressColumn, disable: bool = False,
             transient: bool = False) -> Progress:
    """The progress bar of every command: description, bar, ``n/N`` done, elapsed and remaining time.

    ``extra`` columns go at the end (e.g. the current item). A bar whose total is unknown shows
    ``n/?``. Rich draws nothing while the console is not a terminal until the bar stops, so callers
    pass ``disable`` where even that last line would clutter a pipe.
    """
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TaskProgressColumn(), TimeElapsedColumn(), TimeRemainingColumn(), *extra,
                    console=console or Console(stderr=True), disable=disable, transient=transient)


class StageProgress:
    """A rich progress bar with n/N and ETA, one line per stage; silent when disabled or not on a terminal."""

    def __init__(self, enabled: bool, total: int, stages: tuple[str, ...]) -> None:
        from rich.console import Console

        console = Console(stderr=True)
        self.bar = progress(console, disable=not (enabled and console.is_terminal))
        self.tasks = {stage: self.bar.add_task(stage, total=total) for stage in stages}

    def advance(self, stage: str) -> None:
        if stage in self.tasks:
            self.bar.advance(self.tasks[stage])

    def __enter__(self) -> Callable[[str], None]:
        self.bar.start()
        return self.advance

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()


__all__ = ["CSS", "FILTER_JS", "MARKER", "Html", "StageProgress", "escape", "filter_bar", "html_table",
           "page", "progress", "text_table"]

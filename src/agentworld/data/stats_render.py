"""Rendering of dataset statistics: text histograms for the terminal, an HTML page with inline SVG."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from agentworld.data.process import DatasetStats, Histogram
from agentworld.data.types import MASK_CATEGORIES
from agentworld.report_style import escape, html_table, page


def _label(hist: Histogram, i: int) -> str:
    hi = hist.edges[i + 1] - 1 if i + 1 < len(hist.edges) else None
    lo = hist.edges[i]
    return f"{lo}+" if hi is None else (str(lo) if hi == lo else f"{lo}-{hi}")


def text_histogram(hist: Histogram, width: int = 40) -> list[str]:
    """One line per non-empty bin: range, bar, count."""
    peak = max(hist.counts) or 1
    lines = []
    for i, count in enumerate(hist.counts):
        if count:
            bar = "█" * max(1, round(width * count / peak))
            lines.append(f"{_label(hist, i):>11} │{bar:<{width}} {count}")
    return lines


def print_stats(data: DatasetStats, out: Console) -> None:
    out.print(f"{data.samples} samples from {data.trajectories} trajectories")
    table = Table("domain", "samples")
    for domain, n in sorted(data.domains.items()):
        table.add_row(domain, str(n))
    out.print(table)
    if data.categories:
        cats = Table("category", "share", "samples", "kept")
        for cat, share in data.shares().items():
            cats.add_row(cat, f"{share:.1%}", str(data.categories.get(cat, 0)), str(data.kept.get(cat, 0)))
        out.print(cats)
    for name, hist in (("action tokens", data.action_tokens),
                       ("observation tokens", data.observation_tokens)):
        mean = hist.total / data.samples if data.samples else 0.0
        out.print(f"{name} (mean {mean:.1f}, max {hist.max})", highlight=False)
        for line in text_histogram(hist):
            out.print(line, highlight=False)


def svg_histogram(hist: Histogram, title: str, width: int = 560, height: int = 180) -> str:
    """An inline SVG bar chart of the histogram (bins with data and those between them)."""
    used = [i for i, c in enumerate(hist.counts) if c] or [0]
    bins = list(range(used[0], used[-1] + 1))
    peak = max(hist.counts) or 1
    bar_w = (width - 40) / len(bins)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 40}" role="img">',
             f'<title>{escape(title)}</title>']
    for k, i in enumerate(bins):
        h = (height - 20) * hist.counts[i] / peak
        x, y = 30 + k * bar_w, height - h
        parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" fill="#4a7ab5">'
                     f'<title>{_label(hist, i)}: {hist.counts[i]}</title></rect>')
        parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{height + 14}" font-size="10" text-anchor="middle">'
                     f'{_label(hist, i)}</text>')
        if hist.counts[i]:
            parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{y - 3:.1f}" font-size="10" '
                         f'text-anchor="middle">{hist.counts[i]}</text>')
    parts.append("</svg>")
    return "".join(parts)


def stats_html(data: DatasetStats, title: str = "dataset") -> str:
    """A self-contained HTML page: domain counts, category shares, two inline-SVG histograms."""
    domains = sorted(data.domains.items())
    cats = [[c, f"{s:.1%}", data.categories.get(c, 0), data.kept.get(c, 0)]
            for c, s in data.shares().items() if c in MASK_CATEGORIES]
    body = ["<h2>Domains</h2>", html_table(["domain", "samples"], domains),
            "<h2>Mask categories</h2>", html_table(["category", "share", "samples", "kept"], cats),
            "<h2>Action tokens</h2>",
            f'<div class="card">{svg_histogram(data.action_tokens, "action tokens")}</div>',
            "<h2>Observation tokens</h2>"
            f'<div class="card">{svg_histogram(data.observation_tokens, "observation tokens")}</div>']
    meta = [("samples", data.samples), ("trajectories", data.trajectories)]
    return page("data stats", title, body, meta=meta, stamp=False)

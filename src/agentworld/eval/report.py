"""One self-contained HTML report of an eval run folder: charts, tables and every sample's diff.

A run is judged by reading it, so the report puts the numbers (rubric per domain and dimension,
both "Overall" means, the rule tier, failures and truncations) next to each prediction shown
against its ground truth with the differences highlighted. The file has no external assets, so it
can be mailed or archived as is; every piece of data is HTML-escaped.
"""

from __future__ import annotations

import difflib
from collections import Counter, defaultdict
from pathlib import Path
from statistics import mean
from typing import Any

from agentworld.domains.registry import domain_names, report_order
from agentworld.errors import AgentWorldError, DataError
from agentworld.eval.records import JudgmentRow, PredictionRow, RuleRow
from agentworld.eval.rules.baselines import BASELINES
from agentworld.eval.rules.context import rule_tier
from agentworld.eval.runfolder import RunFolder
from agentworld.eval.score import normalise, score_rows
from agentworld.inputs import parse_json, read_text
from agentworld.io import atomic_write_text
from agentworld.models.parsing import SCORE_DIMENSIONS
from agentworld.report_style import FILTER_JS, Html, escape, filter_bar, html_table, page
from agentworld.schema import BenchSample, load_samples, strip_marker

COLORS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1")
RULE_FIELDS = ("exact", "line_f1", "deterministic", "metadata_valid", "structure", "overall")
e = escape

def _fmt(value: Any, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _config(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "config.json"
    if not path.exists():
        return {}
    cfg = _mapping(path)
    flat = {**_section(cfg, "infer", path), **_section(cfg, "judge", path)}
    return {**flat, **{k: v for k, v in cfg.items() if k not in ("infer", "judge")}}


def _mapping(path: Path) -> dict[str, Any]:
    """A run folder's JSON object file, read as untrusted (:mod:`agentworld.inputs`)."""
    found = parse_json(read_text(path), path=path)
    if not isinstance(found, dict):
        raise DataError(f"expected a JSON object, got {type(found).__name__}", path=str(path))
    return found


def _section(data: dict[str, Any], name: str, path: Path) -> dict[str, Any]:
    value = data.get(name) or {}
    if not isinstance(value, dict):
        raise DataError(f"expected an object, got {type(value).__name__}", path=str(path), field=name)
    return value


def _samples(run_dir: Path, cfg: dict[str, Any]) -> tuple[list[BenchSample], str]:
    paths = [Path(p) if Path(p).exists() else run_dir / p for p in cfg.get("data") or []]
    if not paths:
        return [], "no data paths in config.json: predictions only"
    try:
        return load_samples(paths, known_domains=domain_names()), ""
    except AgentWorldError as exc:
        return [], f"data not readable ({exc}): predictions only"


def bar_chart(domains: dict[str, dict[str, Any]]) -> str:
    """Inline SVG: per domain, one bar per rubric dimension (0–100)."""
    names = [d for d in domains if any(domains[d].get(k) is not None for k in SCORE_DIMENSIONS)]
    if not names:
        return '<p class="note">No rubric judgments yet.</p>'
    bw, gap, h, left, top = 14, 26, 200, 36, 14
    group = bw * len(SCORE_DIMENSIONS) + gap
    width = max(left + group * len(names) + 10, left + 90 * len(SCORE_DIMENSIONS))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h + top + 60}" '
           f'role="img" aria-label="rubric scores per domain" font-family="system-ui" font-size="11">']
    for tick in (0, 25, 50, 75, 100):
        y = top + h - tick * h / 100
        out.append(f'<line x1="{left}" x2="{width}" y1="{y}" y2="{y}" stroke="#ddd"/>'
                   f'<text x="{left - 4}" y="{y + 4}" text-anchor="end" fill="#666">{tick}</text>')
    for gi, name in enumerate(names):
        x0 = left + gi * group + gap / 2
        for di, dim in enumerate(SCORE_DIMENSIONS):
            value = domains[name].get(dim)
            if value is None:
                continue
            bh = max(0.0, min(100.0, value)) * h / 100
            out.append(f'<rect x="{x0 + di * bw}" y="{top + h - bh:.1f}" width="{bw - 2}" height="{bh:.1f}" '
                       f'fill="{COLORS[di]}"><title>{e(name)} {dim}: {value:.1f}</title></rect>')
        out.append(f'<text x="{x0 + group / 2 - gap / 2}" y="{top + h + 16}" '
                   f'text-anchor="middle">{e(name)}</text>')
    for di, dim in enumerate(SCORE_DIMENSIONS):
        x = left + di * 90
        out.append(f'<rect x="{x}" y="{top + h + 34}" width="10" height="10" fill="{COLORS[di]}"/>'
                   f'<text x="{x + 14}" y="{top + h + 43}">{dim}</text>')
    return "".join(out) + "</svg>"


def rule_table(rules: dict[str, RuleRow], domain_of: dict[str, str]) -> str:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for sid, row in rules.items():
        by[domain_of.get(sid, row.domain)].append(row.rule)
    if not by:
        return '<p class="note">No rule scores (rules.jsonl absent).</p>'
    rows = []
    for dom in report_order(by):
        cols = []
        for f in RULE_FIELDS:
            vals = [100.0 * v if isinstance(v, bool) else float(v) for r in by[dom]
                    if isinstance(v := r.get(f), int | float)]
            cols.append(_fmt(mean(vals)) if vals else "–")
        rows.append([dom, str(len(by[dom])), *cols])
    return html_table(["domain", "n", "exact %", "line F1", "deterministic", "metadata valid", "structure",
                   "overall"], rows)


def tier_table(tier: dict[str, Any] | None) -> str:
    """The model's rule overall beside the trivial baselines on the same samples, its skill over
    frame-only and (with a rubric) the rule/rubric Spearman: what the rule numbers above are worth."""
    if not tier:
        return '<p class="note">No baselines (the run\'s data or rule scores are not readable).</p>'
    lines = [*tier.get("domains", {}).items(), ("overall", tier.get("overall") or {})]
    calibrated = any(v.get("rule_rubric_spearman") for _, v in lines)
    rows = []
    for name, line in lines:
        base = line.get("baselines") or {}
        row = [name, str(line.get("n", "–")), _fmt(line.get("overall")),
               *(_fmt(base.get(b)) for b in BASELINES), _fmt(line.get("strongest")),
               _fmt(line.get("skill_over_frame_only"), 2), _fmt(line.get("skill_over_strongest"), 2)]
        if calibrated:
            corr = line.get("rule_rubric_spearman")
            row.append("–" if not corr else f"{_fmt(corr.get('rho'), 2)} (n={corr.get('n', 0)})")
        rows.append(row)
    head = ["domain", "n", "model", *BASELINES, "strongest", "skill over frame_only", "skill over strongest",
            *(["rule/rubric Spearman"] if calibrated else [])]
    return ('<p class="note">Rule overall (0–100) of the model and of trivial predictors on the same '
            "samples; skill over b = (model − b) / (100 − b): 0 is no better than that trivial answer, 1 is "
            "perfect; strongest is the best trivial answer, so skill over it is what the model adds.</p>"
            + html_table(head, rows))


def _mark(text: str, other: str) -> str:
    """Escape ``text`` and highlight the characters that differ from ``other``."""
    out, sm = [], difflib.SequenceMatcher(None, text, other, autojunk=False)
    for op, a0, a1, _, _ in sm.get_opcodes():
        chunk = e(text[a0:a1])
        out.append(chunk if op == "equal" else f'<mark class="x">{chunk}</mark>' if chunk else "")
    return "".join(out)


def diff_table(prediction: str, truth: str) -> str:
    """Side-by-side line diff; changed line pairs get character highlights."""
    p, t = prediction.splitlines(), truth.splitlines()
    rows = ['<table class="d"><tr><th>prediction</th><th>ground truth</th></tr>']
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(None, p, t, autojunk=False).get_opcodes():
        if op == "equal":
            rows += [f"<tr><td>{e(x)}</td><td>{e(x)}</td></tr>" for x in p[a0:a1]]
            continue
        left, right = p[a0:a1], t[b0:b1]
        for i in range(max(len(left), len(right))):
            lx, rx = (left[i] if i < len(left) else None), (right[i] if i < len(right) else None)
            if lx is not None and rx is not None:
                rows.append(f'<tr><td class="chg">{_mark(lx, rx)}</td>'
                            f'<td class="chg">{_mark(rx, lx)}</td></tr>')
            else:
                rows.append(f'<tr><td class="{"del" if lx is not None else ""}">{e(lx or "")}</td>'
                            f'<td class="{"ins" if rx is not None else ""}">{e(rx or "")}</td></tr>')
    return "".join(rows) + "</table>"


def _strip(text: str) -> str:
    return strip_marker(text).strip()


def sample_score(judged: JudgmentRow | None, rule: RuleRow | None, by_judge: bool) -> float | None:
    """The number a sample is ranked and filtered by (0–100): the judge's total (its 1–5 scale mapped
    to 0–100 as the domain means are) in a judged run, else the rule overall; None when there is none
    (a failed judgment, no rule row), which ranks first."""
    if by_judge:
        return None if judged is None or judged.failed else normalise(judged.total_score)
    value = rule.rule.get("overall") if rule is not None else None
    return float(value) if isinstance(value, int | float) else None


def sample_view(sid: str, domain: str, pred: PredictionRow, judged: JudgmentRow | None,
                rule: RuleRow | None, truth: str | None, score: float | None = None) -> str:
    """One sample as a ``<details>`` item: badges, scores, judge notes and the diff to the ground truth;
    ``data-score`` carries ``score`` for the "below" filter."""
    badges, problem = [f'<span class="badge b-dom">{e(domain)}</span>'], False
    if score is not None:
        badges.insert(0, f'<span class="badge b-score" title="rank and filter">{score:.1f}</span>')
    if pred.error:
        badges.append(f'<span class="badge b-fail">prediction error: {e(pred.error[:80])}</span>')
        problem = True
    if pred.truncated:
        badges.append('<span class="badge b-trunc">truncated</span>')
        problem = True
    if judged is not None and judged.failed:
        badges.append(f'<span class="badge b-fail">judge failed: {e(judged.status)}</span>')
        problem = True
    scores = []
    if judged is not None and not judged.failed:
        dims = " ".join(f"{k[:4]}={v}" for k, v in judged.scores.items())
        scores.append(f"judge {_fmt(judged.total_score, 2)} ({e(dims)})")
    if rule is not None:
        scores.append(f"rules {_fmt(rule.rule.get('overall'))}")
    body = (diff_table(_strip(pred.prediction), _strip(truth)) if truth is not None
            else f"<pre>{e(pred.prediction)}</pre>")
    extra = ""
    if judged is not None and (judged.weaknesses or judged.error):
        items = [*judged.weaknesses, *([judged.error] if judged.error else [])]
        extra = ('<div class="note" style="padding:0 10px">judge notes:</div><ul>'
                 + "".join(f"<li>{e(str(w))}</li>" for w in items) + "</ul>")
    data_score = "" if score is None else f' data-score="{score:g}"'
    return (f'<details class="s" data-domain="{e(domain)}" data-problem="{int(problem)}"{data_score}>'
            "<summary>"
            f'{e(sid)}{"".join(badges)} <span class="note">{" · ".join(scores)}</span></summary>'
            f"{extra}{body}</details>")


def _meta(run_dir: Path, cfg: dict[str, Any]) -> list[tuple[str, object]]:
    judge = cfg.get("judge_model") or cfg.get("judge") or "–"
    data = ", ".join(map(str, cfg.get("data") or [])) or "–"
    return [("model", cfg.get("model", "?")), ("judge", f'{judge} ({cfg.get("judge_mode", "rubric")})'),
            ("data", data), ("run", run_dir)]


def _overall(overall: dict[str, Any], n: int) -> str:
    return ('<h2>Overall (rubric, 0–100)</h2><div class="card">'
            f'<span class="big">{_fmt(overall.get("domain_mean"), 2)}</span> domain mean (as published) · '
            f'<span class="big">{_fmt(overall.get("sample_weighted"), 2)}</span> sample-weighted (as the '
            f'official script prints) · {overall.get("valid", 0)} valid of {overall.get("n", n)}, '
            f'{overall.get("failed", 0)} failed (counted, not dropped)</div>')


def _domain_table(domains: dict[str, dict[str, Any]]) -> str:
    counts = ("truncated", "no_generation", "prediction_errors", "judge_failures")
    dims = (*SCORE_DIMENSIONS, "total_score")
    rows = [[d, f"{v.get('valid', '–')}/{v.get('n', '–')}", *(_fmt(v.get(k)) for k in dims),
             *(str(v.get(k, 0)) for k in counts)] for d, v in domains.items()]
    return html_table(["domain", "valid/n", *SCORE_DIMENSIONS, "total", "truncated", "no output",
                       "pred. errors", "judge failures"], rows)


def _filters(domains: list[str], n: int, by_judge: bool) -> str:
    what = "judge total" if by_judge else "rule overall"
    note = (f"Ordered by {what} (0–100), lowest first; samples without one (a failed judgment, no rule "
            "score) come first and always pass the score filter.")
    return (f'<h2 id="samples">Samples, worst first (<span id="shown">{n}</span> shown)</h2>'
            f'<p class="note">{note}</p>' + filter_bar(domains, below=what))


def write_report(run_dir: Path, out: Path | None = None) -> Path:
    """Write ``report.html`` (or ``out``) for the run folder ``run_dir`` and return its path.

    Scores come from ``scores.json`` when present, else they are computed from the journals.
    """
    run_dir = Path(run_dir)
    out = Path(out) if out is not None else run_dir / "report.html"
    cfg = _config(run_dir)
    folder = RunFolder(run_dir)
    preds, judged, rules = folder.predictions(), folder.judgments(), folder.rules()
    samples, note = _samples(run_dir, cfg)
    truth = {s.id: s.ground_truth for s in samples}
    domain_of = {s.id: s.domain for s in samples} | {k: v.domain for k, v in preds.items()}
    ids = [s.id for s in samples if s.id in preds] + [k for k in preds if k not in truth]
    if (run_dir / "scores.json").exists():
        scores = _mapping(run_dir / "scores.json")
        _section(scores, "domains", run_dir / "scores.json")
    else:
        counts = Counter(s.domain for s in samples) or Counter(domain_of[i] for i in ids)
        scores = score_rows(counts, preds.values(), judged.values(), rules.values(),
                            samples=samples).to_json()
    if "rule_tier" not in scores and samples:
        tier = rule_tier(samples, rules.values(), judged.values())
        scores["rule_tier"] = tier.model_dump(mode="json") if tier else None
    domains: dict[str, dict[str, Any]] = scores.get("domains", {})
    by_judge = bool(judged)
    ranked = sorted(((sample_score(judged.get(i), rules.get(i), by_judge), n, i) for n, i in enumerate(ids)),
                    key=lambda t: (t[0] is not None, t[0] or 0.0, t[1]))
    views = [sample_view(i, domain_of[i], preds[i], judged.get(i), rules.get(i), truth.get(i), score)
             for score, _, i in ranked]
    if (scores.get("judge") or {}).get("model") or judged:
        rubric = [_overall(scores.get("overall", {}), len(ids)),
                  f'<h2>Rubric per domain</h2><div class="card">{bar_chart(domains)}</div>',
                  _domain_table(domains)]
    else:
        rubric = ['<h2>Rubric</h2><div class="card">No judge configured for this run: the rubric was '
                  'not scored (add one with <code>agentworld eval judge --run DIR --judge-base-url URL '
                  '--judge-model NAME</code>). The rule tier below needs no judge.</div>',
                  _domain_table(domains)]
    notes = [Html(f'<p class="note">{e(note)}</p>')] if note else []
    parts = [*notes, *rubric,
             "<h2>Rule tier (judge-free)</h2>", rule_table(rules, domain_of),
             "<h2>Rule tier against trivial baselines</h2>", tier_table(scores.get("rule_tier")),
             _filters(report_order(domain_of[i] for i in ids), len(ids), by_judge), *views]
    html = page("eval report", f"AgentWorldBench run: {cfg.get('model', run_dir.name)}", parts,
                meta=_meta(run_dir, cfg), script=FILTER_JS)
    atomic_write_text(out, html)
    return out

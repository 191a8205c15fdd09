"""WideSearch-style scoring of table answers: item F1 (cells) and row F1 (whole rows), 0–100.

Why both: item F1 credits every correct cell, so a half-right table scores half; row F1 credits only
rows whose every cell is right, the stricter measure WideSearch reports beside it. Rows are aligned by
their first column (the entity's name); cells compare after :func:`~agentworld.synth.fiction.bible.normalise`
(case, spaces, thousands separators). Answers may be a ``{"columns", "rows"}`` object, a list of row
objects, or a Markdown table (what agents write).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentworld.errors import AgentWorldError
from agentworld.synth.fiction.bible import normalise, render_value


@dataclass(frozen=True)
class TableScore:
    item_precision: float
    item_recall: float
    item_f1: float
    row_f1: float


def _cell(value: Any) -> str:
    if isinstance(value, float | int) and not isinstance(value, bool):
        return normalise(render_value(value))
    return normalise(str(value)).strip(" .")


def _markdown(text: str) -> tuple[list[str], list[list[str]]]:
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()
            if line.strip().startswith("|")]
    rows = [r for r in rows if not all(set(c) <= set("-: ") for c in r)]
    if not rows:
        raise AgentWorldError("the answer holds no Markdown table")
    return rows[0], rows[1:]


def as_table(answer: Any) -> tuple[list[str], list[list[str]]]:
    """``(columns, rows)`` of a table answer in any accepted form, cells normalised."""
    if isinstance(answer, str):
        columns, rows = _markdown(answer)
    elif isinstance(answer, dict) and all(isinstance(answer.get(k), list) for k in ("columns", "rows")):
        columns = [str(c) for c in answer["columns"]]
        rows = [list(r) for r in answer["rows"] if isinstance(r, list)]
    elif isinstance(answer, list) and all(isinstance(r, dict) for r in answer):
        columns = list(dict.fromkeys(k for r in answer for k in r))
        rows = [[r.get(c, "") for c in columns] for r in answer]
    else:
        raise AgentWorldError(f"not a table answer: {type(answer).__name__}")
    return [_cell(c) for c in columns], [[_cell(c) for c in r] for r in rows]


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def score_table(predicted: Any, reference: Any) -> TableScore:
    """Item and row precision/recall/F1 (0–100) of ``predicted`` against ``reference``.

    Columns are matched by name (case-insensitive), rows by their first column; a predicted row whose
    key is not in the reference, or a duplicate, counts only against precision.
    """
    ref_cols, ref_rows = as_table(reference)
    try:
        pred_cols, pred_rows = as_table(predicted)
    except AgentWorldError:
        pred_cols, pred_rows = ref_cols, []
    where = {c: i for i, c in enumerate(pred_cols)}
    truth = {r[0]: r for r in ref_rows if r}
    n_ref_items = sum(len(r) - 1 for r in truth.values())
    n_pred_items = right_items = right_rows = 0
    used: set[str] = set()
    for row in pred_rows:
        if not row:
            continue
        n_pred_items += max(len(row) - 1, 0)
        ref = truth.get(row[0])
        if ref is None or row[0] in used:
            continue
        used.add(row[0])
        cells = [row[where[c]] == ref[j] if c in where and where[c] < len(row) else False
                 for j, c in enumerate(ref_cols) if j]
        right_items += sum(cells)
        right_rows += all(cells)
    p = right_items / n_pred_items if n_pred_items else 0.0
    r = right_items / n_ref_items if n_ref_items else 0.0
    rp = right_rows / len(pred_rows) if pred_rows else 0.0
    rr = right_rows / len(truth) if truth else 0.0
    return TableScore(100 * p, 100 * r, 100 * _f1(p, r), 100 * _f1(rp, rr))

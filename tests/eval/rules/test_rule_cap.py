"""The rule tier compares at most MAX_SCORED_CHARS of each text, and says so in the score (issue 31).

A 200 MB row cost more than four minutes in ``eval run --model retrieval``: every line of the truth was
masked, classified and counted once per rule and baseline. Past the cap the comparison is cut (at a
line end), the row's score records it, and ``exact``/``verified`` still look at the whole texts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentworld.domains.rules import MAX_SCORED_CHARS, Session
from agentworld.eval.rules.baselines import baseline_scores
from agentworld.eval.rules.scores import score_rules
from agentworld.inputs import read_jsonl
from agentworld.schema import BenchSample

MARKER = "**Environment Observation:**\n"


def screen(chars: int, tag: str = "") -> str:
    """A terminal screen of about ``chars`` characters of distinct lines (no line repeats)."""
    lines = [f"line {n} of the log {tag} pid {n % 9000} at 12:{n % 60:02d}:01"
             for n in range(chars // 40 + 1)]
    return "root@box:/app# cat big.log\n" + "\n".join(lines) + "\nroot@box:/app# "


def sample(observation: str, history: str | None = None) -> BenchSample:
    prompts = ["**Action:**\n```bash\ncat big.log\n```"]
    responses = [MARKER + observation]
    if history is not None:
        prompts.insert(0, "**Action:**\n```bash\ncat old.log\n```")
        responses.insert(0, MARKER + history)
    return BenchSample(task="terminal", id="big-t1", prompt=prompts, response=responses, system_str="sim",
                       turn_idx=len(prompts))


def test_a_long_truth_is_compared_up_to_the_cap_and_the_score_says_so() -> None:
    short = score_rules("terminal", MARKER + screen(1000), MARKER + screen(1000))
    assert short.capped_at is None and "capped" not in short.details
    counts = []
    for size in (2 * MAX_SCORED_CHARS, 10 * MAX_SCORED_CHARS):
        truth = screen(size)
        row = sample(truth)
        score = score_rules("terminal", MARKER + truth, row.ground_truth, row)
        assert score.capped_at == MAX_SCORED_CHARS and score.verified and score.exact
        capped = score.details["capped"]
        assert capped["truth_chars"] == capped["prediction_chars"] == len(truth)
        assert max(capped["compared_chars"]) <= MAX_SCORED_CHARS
        counts.append(score.details["content_units"])
    assert counts[0] == counts[1] <= MAX_SCORED_CHARS // 40  # the work does not grow past the cap


def test_exact_and_verified_still_see_the_uncompared_rest() -> None:
    truth = screen(3 * MAX_SCORED_CHARS)
    changed = truth[:-100] + "a line the truth does not have\n" + truth[-100:]
    score = score_rules("terminal", MARKER + changed, MARKER + truth)
    assert score.capped_at == MAX_SCORED_CHARS
    assert not score.verified and not score.exact
    assert score.line_f1 == 100.0  # the compared part is the same


def test_a_long_history_is_cut_to_the_latest_turns() -> None:
    row = sample(screen(1000), history=screen(5 * MAX_SCORED_CHARS, "old"))
    session = Session.of("terminal", row)
    assert session.cut and sum(len(a) + len(o) for a, o in session.history) <= MAX_SCORED_CHARS
    score = score_rules("terminal", row.ground_truth, row.ground_truth, row)
    assert score.capped_at == MAX_SCORED_CHARS and score.details["capped"]["history_cut"]
    assert set(baseline_scores(row)) == {"frame_only", "empty", "repeat_previous", "constant"}


def test_eval_run_records_the_cap_in_the_rows_score(tmp_path: Path) -> None:
    rows = [sample(screen(3 * MAX_SCORED_CHARS)).to_row(),
            {**sample(screen(500)).to_row(), "id": "small-t1"}]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    argv = ["eval", "run", "--model", "retrieval", "--no-judge", "--no-progress", "--data", str(data),
            "--out", str(tmp_path / "run")]
    done = subprocess.run([sys.executable, "-m", "agentworld", *argv], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    ruled = {r["id"]: r["rule"] for _, r in read_jsonl(tmp_path / "run" / "rules.jsonl")}
    assert ruled["big-t1"]["capped_at"] == MAX_SCORED_CHARS
    assert ruled["big-t1"]["details"]["capped"]["truth_chars"] > MAX_SCORED_CHARS
    assert ruled["small-t1"]["capped_at"] is None

"""Rule-tier scores: identity, metadata masking, content tiers, structure, and corruption monotonicity."""

from __future__ import annotations

import itertools
import json
import random
import re
from pathlib import Path

import pytest

from agentworld.domains.content import RUNTIME_KINDS, check_metadata, mask
from agentworld.domains.rules import GENERIC, rules_for
from agentworld.domains.terminal.commands import written_files
from agentworld.eval.rules.scores import score_rules
from agentworld.schema import BenchSample, Trajectory, Turn, read_bench_jsonl

HOST = "root@ad092d3df69c"


def action(keys: str, state: str | None = None, duration: float = 0.5) -> str:
    """A terminal user turn exactly as the corpus writes it."""
    body = json.dumps([{"keystrokes": keys, "duration": duration}], indent=2, ensure_ascii=False)
    head = f"**Current State:**\n{state}\n\n" if state is not None else ""
    return f"{head}**Action:**\n```json\n{body}\n```"


def obs(screen: str) -> str:
    return "**Environment Observation:**\n" + screen.strip("\n")


def session(tid: str, cwd: str, steps: list[tuple[str, str]]) -> list[BenchSample]:
    turns = [Turn(action=action(k, f"{HOST}:{cwd}#" if i == 0 else None), observation=obs(s))
             for i, (k, s) in enumerate(steps)]
    return Trajectory(id=tid, domain="terminal", task="terminal", system_prompt="You simulate a terminal.",
                      turns=tuple(turns)).samples()


def p(cwd: str = "/app") -> str:
    return f"{HOST}:{cwd}#"


TRAJECTORIES: list[list[BenchSample]] = [
    session("files", "/app", [
        ("ls -la\n", f"""{p()} ls -la
total 16
drwxr-xr-x 1 root root 4096 Mar 14 09:12 .
drwxr-xr-x 1 root root 4096 Mar 14 09:12 ..
-rw-r--r-- 1 root root  220 Mar 14 09:10 README.md
drwxr-xr-x 2 root root 4096 Mar 14 09:11 data
{p()}"""),
        ("cat > notes.txt << 'EOF'\nalpha 3\nbeta 5\ngamma 8\nEOF\n", f"""{p()} cat > notes.txt << 'EOF'
> alpha 3
> beta 5
> gamma 8
> EOF
{p()}"""),
        ("cat notes.txt\n", f"{p()} cat notes.txt\nalpha 3\nbeta 5\ngamma 8\n{p()}"),
        ("awk '{s+=$2} END {print s}' notes.txt\n",
         f"{p()} awk '{{s+=$2}} END {{print s}}' notes.txt\n16\n{p()}"),
        ("python3 -c 'print(sum(range(101)))'\n", f"{p()} python3 -c 'print(sum(range(101)))'\n5050\n{p()}"),
        ("date\n", f"{p()} date\nThu Mar 14 09:13:27 UTC 2024\n{p()}"),
    ]),
    session("proj", "/app", [
        ("cd /app/src && ls\n", f"{p()} cd /app/src && ls\n__init__.py  main.py  utils.py\n{p('/app/src')}"),
        ("python3 --version\n", f"{p('/app/src')} python3 --version\nPython 3.11.2\n{p('/app/src')}"),
        ("wc -l main.py utils.py\n", f"{p('/app/src')} wc -l main.py utils.py\n  42 main.py\n  17 utils.py\n"
                                     f"  59 total\n{p('/app/src')}"),
        ("sleep 30 &\n", f"{p('/app/src')} sleep 30 &\n[1] 4521\n{p('/app/src')}"),
        ("ps\n", f"""{p('/app/src')} ps
    PID TTY          TIME CMD
      1 pts/0    00:00:00 bash
   4521 pts/0    00:00:00 sleep
   4533 pts/0    00:00:00 ps
{p('/app/src')}"""),
        ("du -sh /app\n", f"{p('/app/src')} du -sh /app\n1.2M\t/app\n{p('/app/src')}"),
    ]),
    session("git", "/app", [
        ("git init -q && git add -A && git commit -qm init && git log --oneline\n",
         f"{p()} git init -q && git add -A && git commit -qm init && git log --oneline\n3f2a9c1 init\n{p()}"),
        ("git rev-parse HEAD\n",
         f"{p()} git rev-parse HEAD\n3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39\n{p()}"),
        ("echo $((6*7))\n", f"{p()} echo $((6*7))\n42\n{p()}"),
        ("head -2 /etc/os-release\n", f'{p()} head -2 /etc/os-release\nPRETTY_NAME="Debian GNU/Linux 12 '
                                      f'(bookworm)"\nNAME="Debian GNU/Linux"\n{p()}'),
        ("frobnicate --all\n", f"{p()} frobnicate --all\nbash: frobnicate: command not found\n{p()}"),
        ("cat /proc/sys/kernel/random/uuid\n",
         f"{p()} cat /proc/sys/kernel/random/uuid\n550e8400-e29b-41d4-a716-446655440000\n{p()}"),
    ]),
    session("loop", "/tmp", [
        ("seq 1 5\n", f"{p('/tmp')} seq 1 5\n1\n2\n3\n4\n5\n{p('/tmp')}"),
        ('for i in 1 2 3; do echo "item $i"; done\n',
         f'{p("/tmp")} for i in 1 2 3; do echo "item $i"; done\nitem 1\nitem 2\nitem 3\n{p("/tmp")}'),
        ("echo 'hello world' > greet.txt && md5sum greet.txt\n",
         f"{p('/tmp')} echo 'hello world' > greet.txt && md5sum greet.txt\n"
         f"6f5902ac237024bdd0c176cb93063dc4  greet.txt\n{p('/tmp')}"),
        ("time python3 -c 'print(1)'\n", f"""{p('/tmp')} time python3 -c 'print(1)'
1

real\t0m0.021s
user\t0m0.013s
sys\t0m0.008s
{p('/tmp')}"""),
        ("grep -n world greet.txt\n", f"{p('/tmp')} grep -n world greet.txt\n1:hello world\n{p('/tmp')}"),
    ]),
]
SAMPLES = [s for traj in TRAJECTORIES for s in traj]


def _recorded() -> list[BenchSample]:
    try:
        from agentworld.corpus import corpus_path  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return []
    path = Path(corpus_path("terminal"))
    return list(read_bench_jsonl(path))[:300] if path.is_file() else []


def corrupt(text: str, rng: random.Random) -> str:
    """Change most content lines: other digits, other words, some lines dropped."""
    lines = text.replace("**Environment Observation:**\n", "").splitlines()
    end = len(lines) - 1 if lines and re.fullmatch(r"\S+@\S+:\S*#", lines[-1]) else len(lines)
    start = 1 if end > 1 else 0
    out = lines[:start]
    for line in lines[start:end]:
        if rng.random() < 0.3:
            continue
        line = re.sub(r"\d", lambda m: str((int(m.group()) + rng.randint(1, 9)) % 10), line)
        out.append(re.sub(r"[A-Za-z]{2,}", lambda _: rng.choice(["foo", "bar", "lorem", "ipsum"]), line))
    return "**Environment Observation:**\n" + "\n".join(out + lines[end:])


def mean_overall(samples: list[BenchSample], fraction: float) -> float:
    rng = random.Random(7)
    order = list(range(len(samples)))
    random.Random(11).shuffle(order)
    bad = set(order[:round(fraction * len(samples))])
    total = 0.0
    for i, s in enumerate(samples):
        pred = corrupt(s.ground_truth, rng) if i in bad else s.ground_truth
        total += score_rules(s.domain, pred, s.ground_truth, s).overall
    return total / len(samples)


@pytest.mark.parametrize("samples", [SAMPLES, pytest.param(_recorded(), id="recorded-corpus", marks=
                         pytest.mark.skipif(not _recorded(), reason="terminal corpus not recorded yet"))])
def test_overall_falls_monotonically_with_corruption(samples: list[BenchSample]) -> None:
    means = [mean_overall(samples, f) for f in (0.0, 0.25, 0.5, 1.0)]
    assert means[0] == pytest.approx(100.0)
    assert all(a > b for a, b in itertools.pairwise(means)), means
    assert means[0] - means[-1] > 20, means


def test_identical_text_scores_100() -> None:
    for s in SAMPLES:
        r = score_rules("terminal", s.ground_truth, s.ground_truth, s)
        assert r.exact and r.overall == 100 and r.line_f1 == 100 and r.structure == 100
        assert r.deterministic in (None, 100.0) and r.metadata_valid in (None, 100.0)


def test_metadata_only_differences_keep_deterministic_high() -> None:
    s = TRAJECTORIES[1][4]  # ps listing
    pred = s.ground_truth.replace("4521", "812").replace("4533", "907").replace("00:00:00", "00:00:01")
    r = score_rules("terminal", pred, s.ground_truth, s)
    # the echo and prompt lines are frame now, so a listing has no deterministic content at all
    assert not r.exact and r.deterministic is None and r.metadata_valid == 100 and r.line_f1 == 100
    assert r.verified, "the content is the truth's up to runtime metadata"
    ls = TRAJECTORIES[0][0]
    pred = ls.ground_truth.replace("Mar 14 09:12", "Jan  2 17:40").replace(" 220 ", " 1337 ")
    r = score_rules("terminal", pred, ls.ground_truth, ls)
    assert r.metadata_valid == 100 and r.line_f1 == 100 and r.overall > 80


def test_altered_computation_lowers_deterministic() -> None:
    s = TRAJECTORIES[0][4]  # python3 -c 'print(sum(range(101)))' -> 5050
    r = score_rules("terminal", s.ground_truth.replace("5050", "5051"), s.ground_truth, s)
    assert r.deterministic is not None and r.deterministic < 80
    cat = TRAJECTORIES[0][2]  # reads the heredoc written one turn earlier
    assert score_rules("terminal", cat.ground_truth, cat.ground_truth, cat).details["tiers"] == {
        "deterministic": 3}  # the file's three lines; echo and prompt are frame
    r = score_rules("terminal", cat.ground_truth.replace("beta 5", "beta 6"), cat.ground_truth, cat)
    assert r.deterministic is not None and r.deterministic < 100


def test_environment_content_is_not_deterministic() -> None:
    s = TRAJECTORIES[2][3]  # head /etc/os-release: pre-existing environment
    r = score_rules("terminal", s.ground_truth.replace("bookworm", "trixie"), s.ground_truth, s)
    assert r.deterministic is None and r.details["tiers"] == {"environment": 2} and r.line_f1 < 100


def test_impossible_metadata_is_invalid() -> None:
    s = TRAJECTORIES[0][5]  # date
    r = score_rules("terminal", s.ground_truth.replace("09:13:27", "29:73:27"), s.ground_truth, s)
    assert r.metadata_valid is not None and r.metadata_valid < 100
    assert check_metadata(mask("pid 0"), mask("pid 12")).score == 0
    assert mask("commit 3f2a9c1e and 550e8400-e29b-41d4-a716-446655440000").text == "commit <HEX> and <UUID>"


def test_terminal_structure() -> None:
    s = TRAJECTORIES[0][4]
    no_prompt = s.ground_truth.rsplit("\n", 1)[0]
    assert score_rules("terminal", no_prompt, s.ground_truth, s).details["structure"]["ends_with_prompt"] == 0
    wrong_echo = s.ground_truth.replace("print(sum", "print(max", 1)
    assert score_rules("terminal", wrong_echo, s.ground_truth, s).details["structure"]["echo"] == 0.5
    assert score_rules("terminal", "5050", s.ground_truth, s).structure < 40


def test_written_files_from_heredoc_and_echo() -> None:
    w = written_files(["cat > notes.txt << 'EOF'\nalpha 3\nEOF\n", "echo 'x=1' > cfg.ini\n"])
    assert w.names == {"notes.txt", "cfg.ini"} and {"alpha 3", "x=1"} <= w.lines


def test_mcp_json_structure_and_fields() -> None:
    call = json.dumps({"tool_name": "get_user_details", "arguments": {"user_id": "sophia_silva_7557"}})
    truth = obs(json.dumps({"user_id": "sophia_silva_7557", "name": {"first_name": "Sophia"},
                            "membership": "gold", "reservations": ["NM1VX1", "KC18K6"]}))
    s = BenchSample(task="mcp", id="m1", prompt=[call], response=[truth])
    assert score_rules("mcp", truth, truth, s).overall == 100
    assert score_rules("mcp", truth, truth, s).details["tiers"]["deterministic"] == 1
    missing = obs(json.dumps({"user_id": "sophia_silva_7557", "membership": "gold"}))
    r = score_rules("mcp", missing, truth, s)
    assert 40 < r.structure < 100 and r.deterministic == 100
    assert score_rules("mcp", "Error: user not found", truth, s).structure < 20


def test_search_and_tree_structure_and_generic_fallback() -> None:
    truth = "1. Python docs\nhttps://docs.python.org\n2. PyPI\nhttps://pypi.org"
    assert score_rules("search", truth, truth).structure == 100
    assert score_rules("search", "No results.", truth).structure < 50
    tree = "[1] window 'Settings'\n  [2] button 'OK'\n  [3] button 'Cancel'"
    assert score_rules("android", tree.replace("OK", "Yes"), tree).structure == 100
    assert score_rules("android", "[1] text 'hello'", tree).structure < 50
    assert rules_for("nosuchdomain") == (GENERIC, False)
    generic = score_rules("nosuchdomain", "a\nb", "a\nb")
    assert generic.overall == 100 and generic.details["rules"] == "generic"


def test_frame_only_and_structure_only_predictions_score_near_zero_when_the_truth_has_output() -> None:
    s = TRAJECTORIES[0][4]  # python3 -c 'print(sum(range(101)))' -> 5050
    frame_lines = [x for x in s.ground_truth.splitlines() if x.startswith(HOST)]
    frame = "\n".join(frame_lines)
    r = score_rules("terminal", frame, s.ground_truth, s)
    assert r.has_content and r.structure == 100 and r.content == 0 and r.overall == 0 and not r.verified
    truth = score_rules("terminal", s.ground_truth, s.ground_truth, s)
    assert truth.overall == 100 and truth.verified and truth.details["frame_units"] == len(frame_lines)


def test_missing_metadata_is_missing_not_valid() -> None:
    s = TRAJECTORIES[0][5]  # date
    stamp = re.search(r"\d\d:\d\d:\d\d", s.ground_truth)
    assert stamp is not None
    without = s.ground_truth.replace(stamp.group(0), "")
    r = score_rules("terminal", without, s.ground_truth, s)
    assert r.metadata_valid == 0


def test_a_turn_without_output_is_scored_on_printing_nothing_and_its_frame() -> None:
    cd = session("cd", "/app", [("cd /tmp\n", f"{p()} cd /tmp\n{p('/tmp')}")])[0]
    assert not score_rules("terminal", cd.ground_truth, cd.ground_truth, cd).has_content
    chatty = score_rules("terminal", f"{p()} cd /tmp\nchanged directory\n{p('/tmp')}", cd.ground_truth, cd)
    stale = score_rules("terminal", f"{p()} cd /tmp\n{p()}", cd.ground_truth, cd)
    empty = score_rules("terminal", "", cd.ground_truth, cd)
    assert chatty.overall == 0 and empty.overall == 0 and 0 < stale.overall < 100
    assert not stale.verified and not chatty.verified


def test_mask_caches_lines_and_masks_long_texts_the_same_way() -> None:
    line = "pid 4242 started at 12:00:01 in 0.5s"
    assert mask(line).text == "pid <PID> started at <TS> in <DUR>"
    assert mask(line) is mask(line)  # cached: a corpus check masks each history line many times
    assert mask(line, RUNTIME_KINDS) is mask(line, RUNTIME_KINDS) and mask(line, frozenset({"TS"})).text \
        == "pid 4242 started at <TS> in 0.5s"  # the kinds are part of the key
    long = "\n".join([line] * 100)  # past the cached length: masked afresh, the same way
    assert mask(long) is not mask(long)
    assert mask(long).text == "\n".join([mask(line).text] * 100) and len(mask(long).tokens) == 300

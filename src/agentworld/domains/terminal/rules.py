"""The terminal's rules: the prompt and echoed keystrokes are frame, what the command printed is content.

Deterministic content is the echo, computations and reads of files the session wrote itself
(:mod:`agentworld.domains.terminal.commands`); structure checks the echo line, the prompts and the
final working directory. The frame-only prediction echoes the keystrokes and prints the prompt again.
"""

from __future__ import annotations

import re

from agentworld.domains.actions import PROMPT_RE, terminal_keystrokes, terminal_state
from agentworld.domains.rules import DomainRules, Session, Tier, clean, is_metadata, lines_of, norm, ratio
from agentworld.domains.terminal.commands import command_is_deterministic, written_files

DEFAULT_PROMPT = "root@localhost:/app#"
"""The frame-only predictor's prompt when no earlier screen (nor a first turn's current state) shows one."""


def terminal_tiers(units: list[str], session: Session) -> list[Tier]:
    """Echo/prompt/typed lines, computations and reads of files written earlier are deterministic."""
    keys = terminal_keystrokes(session.action) or ""
    written = written_files([k for a, _ in session.history if (k := terminal_keystrokes(a))] + [keys])
    typed = {norm(x) for x in keys.splitlines()}
    computed = command_is_deterministic(keys, written)
    tiers: list[Tier] = []
    for n, unit in enumerate(units):
        prompt = PROMPT_RE.match(unit)
        if (n == 0 and prompt) or (prompt and not prompt.group("cmd")) or unit.lstrip("> ") in typed:
            tiers.append("deterministic")
        elif is_metadata(unit):
            tiers.append("metadata")
        elif computed or unit in written.lines or re.search(r"command not found|No such file", unit):
            tiers.append("deterministic")
        else:
            tiers.append("environment")
    return tiers


def terminal_structure(pred: str, truth: str, _: Session) -> tuple[float, dict[str, float]]:
    """Echo line, prompt count and form, ends-with-prompt, final cwd."""
    p, t = lines_of(pred), lines_of(truth)
    tp = [m for x in t if (m := PROMPT_RE.match(x))]
    pp = [m for x in p if (m := PROMPT_RE.match(x))]
    checks: dict[str, float] = {}
    first_t = PROMPT_RE.match(t[0]) if t else None
    if first_t and first_t.group("cmd"):
        first_p = PROMPT_RE.match(p[0]) if p else None
        checks["echo"] = 0.0 if not first_p else 1.0 if first_p.group("cmd") == first_t.group("cmd") else 0.5
    ends_t = bool(t and (m := PROMPT_RE.match(t[-1])) and not m.group("cmd"))
    ends_p = bool(p and (m := PROMPT_RE.match(p[-1])) and not m.group("cmd"))
    checks["ends_with_prompt"] = float(ends_t == ends_p)
    checks["prompt_count"] = ratio(len(pp), len(tp))
    loose = [x for x in p if re.match(r"^\S+@\S*:.*[#$]", x)]
    if loose:  # vacuous without prompt-like lines: an empty prediction earns nothing here
        checks["prompts_well_formed"] = len(pp) / len(loose)
    if tp:
        checks["cwd"] = float(bool(pp) and pp[-1].group("cwd") == tp[-1].group("cwd"))
    return 100 * sum(checks.values()) / len(checks), checks


def terminal_frame(units: list[str], session: Session) -> list[bool]:
    """Prompt lines (with or without an echoed command) and typed continuation lines (``> …``)."""
    typed = {norm(x) for x in (terminal_keystrokes(session.action) or "").splitlines()}
    return [bool(PROMPT_RE.match(u)) or (u.startswith(">") and norm(u.lstrip("> ")) in typed) for u in units]


def terminal_frame_only(_truth: str, session: Session) -> str:
    """The echoed keystrokes after the last prompt on the previous screen (on a first turn, the
    ``**Current State:**`` screen the action carries), then that prompt again."""
    screen = clean(session.history[-1][1]) if session.history else terminal_state(session.action) or ""
    bare = [x for x in lines_of(screen) if (m := PROMPT_RE.match(x)) and not m.group("cmd")]
    prompt = bare[-1] if bare else DEFAULT_PROMPT
    keys = (terminal_keystrokes(session.action) or "").rstrip("\n").split("\n")
    lines = [f"{prompt} {keys[0]}".rstrip(), *(f"> {k}" for k in keys[1:]), prompt]
    return "\n".join(lines)


RULES = DomainRules(lines_of, terminal_tiers, terminal_structure, terminal_frame, terminal_frame_only)

"""How the rule tier scores the notes domain: ``KEY = VALUE`` lines, values the session set are known."""

from __future__ import annotations

from agentworld.domains.rules import DomainRules, Session, Tier, generic_tiers, lines_of, ratio


def _known(session: Session) -> set[str]:
    """``KEY = VALUE`` for every ``set KEY VALUE`` so far: reading it back can only give that."""
    actions = [a for a, _ in session.history] + [session.action]
    return {f"{w[1]} = {' '.join(w[2:])}" for a in actions if len(w := a.split()) > 2 and w[0] == "set"}


def tiers(units: list[str], session: Session) -> list[Tier]:
    known = _known(session)
    return ["deterministic" if unit in known else tier
            for unit, tier in zip(units, generic_tiers(units, session), strict=True)]


def structure(pred: str, truth: str, _: Session) -> tuple[float, dict[str, float]]:
    """As many lines as the truth, as many of them ``KEY = VALUE`` pairs."""
    p, t = lines_of(pred), lines_of(truth)
    checks = {"lines": ratio(len(p), len(t)),
              "pairs": ratio(sum(" = " in x for x in p), sum(" = " in x for x in t))}
    return 100 * sum(checks.values()) / len(checks), checks


RULES = DomainRules(units=lines_of, classify=tiers, structure=structure)

"""Rule scoring of web observations: accessibility-tree structure, node identity and field values.

Units are the observation's lines (the tab and URL header, then one accessibility-tree node per line,
``[bid] role 'name', property=value``). **Frame**: the lines carried over unchanged from the page
before the action (the previous observation, or the first turn's ``**Current State:**``). The
official prompt asks to keep untouched subtrees verbatim, so any predictor that copies the last page
gets them right; what the action changed or brought — a new page, a typed value, a validation
message — is the **content**. So repeating the previous page (the frame-only prediction) scores about
0 whenever the page changed, and the full score only where it did not.

Tiers: a line already seen in the session (a page visited again) or that shows a value the action
typed or the URL it opened is deterministic; metadata as everywhere; the rest is the site's content.
Structure compares the tree's shape — (depth, role) of each node and the node count — the page
identity (tab titles and URL), node identity (role and name of each bid) and field values (a bid's
``value``/``checked``/``selected``).
"""

from __future__ import annotations

import ast
import re
from collections import Counter

from agentworld.domains.content import mask
from agentworld.domains.rules import DomainRules, Session, Tier, clean, lines_of, multiset_f1, norm
from agentworld.domains.web.actions import web_call, web_state

_NODE = re.compile(r"^(?P<indent>\t*)(?:\[(?P<bid>[^\]]+)\] )?(?P<role>[A-Za-z][\w-]*) "
                   r"(?P<name>'(?:[^'\\]|\\.)*'|\"[^\"]*\")(?P<props>.*)$")
_VALUE = re.compile(r"\b(value|checked|selected|pressed|expanded)=('(?:[^'\\]|\\.)*'|\w+)")
_HEADER = re.compile(r"^(?:Tab \d+(?: \(current\))?: |URL: |Error: )")


def previous_page(session: Session) -> str:
    """The page the action was taken on (previous observation, or the first turn's current state)."""
    if session.history:
        return clean(session.history[-1][1])
    return web_state(session.action) or ""


def web_frame(units: list[str], session: Session) -> list[bool]:
    """Lines the previous page already had (each of its lines covers one occurrence)."""
    left = Counter(lines_of(previous_page(session)))
    out = []
    for unit in units:
        carried = left[unit] > 0
        if carried:
            left[unit] -= 1
        out.append(carried)
    return out


def web_frame_only(_truth: str, session: Session) -> str:
    """The page before the action, unchanged (what a predictor that knows nothing of its effect writes)."""
    return previous_page(session)


def _typed(session: Session) -> list[str]:
    """Literal strings of the current action's arguments (a filled value, an option, a URL)."""
    call = web_call(session.action)
    return [v for v in re.findall(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", call)
            for v in [_literal(v)] if v and not v.isdigit()]


def _literal(text: str) -> str:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return ""
    return value if isinstance(value, str) else ""


def web_tiers(units: list[str], session: Session) -> list[Tier]:
    seen = session.seen()
    typed = _typed(session)
    tiers: list[Tier] = []
    for unit in units:
        masked = mask(unit).text
        if masked != unit and len(re.sub(r"<[A-Z]+>|[\W_]", "", masked)) < 3:
            tiers.append("metadata")
        elif norm(masked) in seen or any(t in unit for t in typed):
            tiers.append("deterministic")
        else:
            tiers.append("environment")
    return tiers


def _nodes(text: str) -> list[re.Match[str]]:
    return [m for line in clean(text).splitlines() if (m := _NODE.match(line))]


def _ratio(a: int, b: int) -> float:
    return 1.0 if a == b else min(a, b) / max(a, b)


def web_structure(pred: str, truth: str, _: Session) -> tuple[float, dict[str, float]]:
    """Page identity, tree shape, node identity per bid and field values per bid (0–100)."""
    p_lines, t_lines = clean(pred).splitlines(), clean(truth).splitlines()
    p_nodes, t_nodes = _nodes(pred), _nodes(truth)
    checks: dict[str, float] = {}
    t_head = [x for x in t_lines if _HEADER.match(x)]
    if t_head:
        checks["page"] = multiset_f1([x for x in p_lines if _HEADER.match(x)], t_head) / 100
    shape = lambda ms: [f"{len(m.group('indent'))}:{m.group('role')}" for m in ms]  # noqa: E731
    checks["roles"] = multiset_f1(shape(p_nodes), shape(t_nodes)) / 100
    checks["node_count"] = _ratio(len(p_nodes), len(t_nodes))
    p_bid = {m.group("bid"): m for m in p_nodes if m.group("bid")}
    t_bid = {m.group("bid"): m for m in t_nodes if m.group("bid")}
    if t_bid:
        same = sum(1 for b, m in t_bid.items() if b in p_bid and
                   (p_bid[b].group("role"), p_bid[b].group("name")) == (m.group("role"), m.group("name")))
        checks["identity"] = same / len(set(t_bid) | set(p_bid))
    fields = {b: found for b, m in t_bid.items() if (found := _VALUE.findall(m.group("props")))}
    if fields:
        checks["values"] = sum(b in p_bid and _VALUE.findall(p_bid[b].group("props")) == v
                               for b, v in fields.items()) / len(fields)
    return 100 * sum(checks.values()) / len(checks), checks


RULES = DomainRules(lines_of, web_tiers, web_structure, web_frame, web_frame_only)

"""Sim-to-real routing of web actions: everything on the local site may run in the real browser.

Reading actions (``noop``, ``scroll``, ``hover``, ``mouse_move``, ``tab_focus``, messages to the user)
cannot change a site, so a model step of them leaves the real browser in step with the episode.
Clicks, typing, form fields and navigation may change the site (a submitted form, a cart) or the page
the next bids refer to: they run for real, and a model step of them diverges the episode. A ``goto``
anywhere but the local site (:data:`~agentworld.domains.web.actions.CANONICAL_ORIGIN`) cannot run
here (no network): the model imagines that page, and the real browser no longer shows what the
episode does.
"""

from __future__ import annotations

import ast
import re

from agentworld.domains.base import RouteDecision
from agentworld.domains.web.actions import CANONICAL_ORIGIN, web_call
from agentworld.envs.browser import OFFICIAL_ACTIONS, READING_ACTIONS, action_name


def _goto_url(call: str) -> str | None:
    m = re.match(r"^\s*goto\s*\(\s*(?:url\s*=\s*)?(?P<url>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")", call)
    if not m:
        return None
    try:
        value = ast.literal_eval(m.group("url"))
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


def decide(action: str) -> RouteDecision:
    """Where one web action should run, and whether a model step of it may change the world."""
    call = web_call(action)
    name = action_name(call)
    if name is None or name not in OFFICIAL_ACTIONS:
        return RouteDecision("model", f"not an action of the web action space: {call[:60]!r}",
                             side_effects=False)
    if name in READING_ACTIONS:
        return RouteDecision("real", f"{name} only reads the page", side_effects=False)
    if name == "goto":
        url = _goto_url(call)
        if url is None:
            return RouteDecision("model", "goto without a literal URL", side_effects=False)
        if url != CANONICAL_ORIGIN and not url.startswith(CANONICAL_ORIGIN + "/"):
            return RouteDecision("model", "goto leaves the local site (no network here)")
    return RouteDecision("real", f"{name} runs on the local site and may change it")

"""Web action text: a BrowserGym call in the user turn, the first turn also carrying the start page.

Shared by the recorder (which writes it), the environment and the router (which read it)::

    **Current State:**
    Tab 0 (current): Welcome - Loopback Books
    URL: http://localhost:8000/
    ...

    **Action:**
    ```
    click('12')
    ```
"""

from __future__ import annotations

import re

CANONICAL_ORIGIN = "http://localhost:8000"
"""How the local site's origin appears in actions and observations (its real loopback port varies)."""
_ACTION_RE = re.compile(r"\*\*Action:\*\*\s*(?:```[a-z]*\s*\n?(?P<fenced>.*?)```|(?P<bare>.*))", re.S)
_STATE_RE = re.compile(r"\*\*Current State:\*\*\s*\n(?P<state>.*?)(?=\n\s*\*\*Action:\*\*|\Z)", re.S)


def format_web_action(call: str, current_state: str | None = None) -> str:
    """The user-turn text of one browser action (``current_state`` only on the first turn)."""
    head = f"**Current State:**\n{current_state}\n\n" if current_state is not None else ""
    return f"{head}**Action:**\n```\n{call.strip()}\n```"


def web_call(action: str) -> str:
    """The BrowserGym call in an action text (the text itself when it has no ``**Action:**`` part)."""
    m = _ACTION_RE.search(action)
    if not m:
        return action.strip()
    return (m.group("fenced") if m.group("fenced") is not None else m.group("bare") or "").strip()


def web_state(action: str) -> str | None:
    """The ``**Current State:**`` page of a first turn, if present."""
    m = _STATE_RE.search(action)
    return m.group("state").rstrip() if m else None

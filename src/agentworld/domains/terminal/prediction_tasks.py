"""The terminal's built-in tasks for ``agentworld eval agent-predictions``: its held-out scenarios.

The scenarios' unrecorded setup commands become setup actions typed into the same shell, so the
task runs in the terminal's real environment (:mod:`agentworld.domains.terminal.env`) like any other.
"""

from __future__ import annotations

from typing import Any

SETUP_DURATION_S = 1.0


def heldout_tasks() -> list[dict[str, Any]]:
    """One task per held-out scenario (``heldout.json``), its turns as the fixed steps."""
    from agentworld.domains.base import plugin
    from agentworld.domains.terminal import PLUGIN
    from agentworld.domains.terminal.record import load_scenarios

    found = plugin(PLUGIN.name) or PLUGIN
    path = found.data_file(found.heldout_scenarios)
    if path is None:
        return []
    return [{"id": s.name, "domain": found.name,
             "setup": [[{"keystrokes": command + "\n", "duration": SETUP_DURATION_S}] for command in s.setup],
             "steps": [[a.to_json() for a in turn] for turn in s.actions]}
            for s in load_scenarios(path)]

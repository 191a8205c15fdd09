"""The names of each domain's held-out scenarios: the trajectories its corpus must never hold.

A domain's ``heldout_scenarios`` file is in the form its recorder reads; every recorder reads either a
JSON list or JSON lines of scenario objects with a ``name`` (the terminal's list may also name a
built-in scenario by a plain string). The name becomes the recorded trajectory's id, so these names
are what a recording of the built-in held-out set is recognised by (``eval run``'s ``--exclude-own``
default, the held-out/corpus overlap test).
"""

from __future__ import annotations

import json
from pathlib import Path

from agentworld.domains.base import DomainPlugin, plugins
from agentworld.errors import DataError
from agentworld.inputs import jsonl_rows


def _items(path: Path) -> list[object]:
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, list):
        return data
    return [item for _, item in jsonl_rows(text, path=path)]


def heldout_names(found: DomainPlugin) -> frozenset[str]:
    """The names of ``found``'s held-out scenarios (empty when it ships none).

    Raises:
        DataError: a scenario without a string ``name``, naming the file and the scenario's index.
    """
    path = found.data_file(found.heldout_scenarios)
    if path is None:
        return frozenset()
    names: set[str] = set()
    for index, item in enumerate(_items(path)):
        name = item if isinstance(item, str) else item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or not name:
            raise DataError(f"scenario {index}: no name", path=str(path), field="name")
        names.add(name)
    return frozenset(names)


def heldout_sets() -> dict[str, frozenset[str]]:
    """Domain → the names of its held-out scenarios, for every domain that ships some."""
    return {name: names for name, p in plugins().items() if (names := heldout_names(p))}


__all__ = ["heldout_names", "heldout_sets"]

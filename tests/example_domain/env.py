"""The notebook itself: the notes domain's real environment (in memory, so nothing to clean up)."""

from __future__ import annotations


class Notebook:
    """Answers each command as the domain's observations show it (``OK``, ``KEY = VALUE`` …)."""

    def __init__(self) -> None:
        self._notes: dict[str, str] = {}

    def initial_observation(self) -> str:
        return "(empty)"

    def step(self, action: str) -> str:
        verb, _, rest = action.strip().partition(" ")
        key, _, value = rest.strip().partition(" ")
        if verb == "set" and key and value:
            self._notes[key] = value
            return "OK"
        if verb in ("get", "del") and key not in self._notes:
            return f"(no such key: {key})"
        if verb == "get":
            return f"{key} = {self._notes[key]}"
        if verb == "del":
            del self._notes[key]
            return "OK"
        if verb == "list":
            return "\n".join(f"{k} = {v}" for k, v in sorted(self._notes.items())) or "(empty)"
        return f"(unknown command: {action.strip()})"

    def close(self) -> None:
        self._notes.clear()


def open_environment(seed: int = 0, **options: object) -> Notebook:
    return Notebook()

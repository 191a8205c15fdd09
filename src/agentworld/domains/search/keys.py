"""Retrieval keys for search: compare what a call asks for, and rewrite a memory write's echo.

Why: the generic tool-call key compares the JSON text of a call, where the query words are a small part
of it. Here a search is keyed by its query words, a page read by its URL (and goal words), a memory
call by its operation and keys, each within its tool (and memory operation) as a group. A recorded
memory-write answer is rewritten for the current call's keys — it is a function of the call, like the
terminal's echoed command — everything else is returned as recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentworld.domains.actions import normalise_action, tool_call
from agentworld.domains.retrieval_keys import FIRST_TURN, ActionKey
from agentworld.domains.search.tools import memory_write_message
from agentworld.envs.search_index import tokens
from agentworld.schema import OBSERVATION_MARKER, strip_marker


def _queries(args: dict[str, Any]) -> list[str]:
    q = args.get("queries", args.get("query"))
    return [q] if isinstance(q, str) else [x for x in q if isinstance(x, str)] if isinstance(q, list) else []


class SearchKeys:
    """:class:`~agentworld.domains.retrieval_keys.RetrievalKeys` of the search domain."""

    exact_first = True
    context_weight = 0.05

    def key(self, action: str) -> ActionKey:
        call = tool_call(action)
        if call is None:
            return ActionKey(normalise_action(action))
        name, args = call
        if name == "web_search":
            words = [w for q in _queries(args) for w in tokens(q)]
            return ActionKey(f"{name} {' '.join(words)}", name, tuple(f"q:{w}" for w in words))
        if name == "web_extractor":
            url, goal = str(args.get("url", "")), str(args.get("goal") or "")
            words = tokens(goal)
            return ActionKey(f"{name} {url} {' '.join(words)}", name,
                             (f"url:{url}", f"url:{url}", *(f"goal:{w}" for w in words)))
        if name == "dict_memory":
            op = str(args.get("operation"))
            keys = [str(k) for k in (args.get("dict") or {})] + [str(k) for k in args.get("key_list") or []]
            return ActionKey(f"{name} {op} {' '.join(keys)}", f"{name}:{op}",
                             tuple(f"key:{k}" for k in keys))
        return ActionKey(normalise_action(action), name)

    def context(self, prev_action: str | None, prev_obs: str | None, first_action: str) -> str:
        return self.key(prev_action).text if prev_action else FIRST_TURN

    def observation_mode(self, observation: str) -> bool | None:
        return None

    def query_mode(self, prev_obs: str | None, first_action: str) -> bool | None:
        return None

    def adapt(self, observation: str, action: str, first_action: str, observations: Sequence[str]) -> str:
        """A recorded memory-write success message becomes the current call's message."""
        call = tool_call(action)
        message = memory_write_message(*call) if call else None
        body = strip_marker(observation)
        if message is not None and body.startswith("Successfully ") and "\n" not in body:
            return f"{OBSERVATION_MARKER}\n{message}"
        return observation


KEYS = SearchKeys()

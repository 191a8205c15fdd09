"""The real search environment one episode drives: BM25 over a local document folder, fresh memory.

Why: recorders and sim-to-real routing share one object (:class:`~agentworld.domains.base.RealEnvironment`),
so what the router returns is what the recorder writes. Actions are row actions (``**Action:**`` and a
JSON tool call); observations are the tool output without the observation marker. The index is read-only
and built once per process for each (folder, URL prefix); only the episode's memory is per environment.
"""

from __future__ import annotations

import threading
from pathlib import Path

from agentworld.domains.search.tools import SearchTools, ToolError, parse_action
from agentworld.envs.search_index import PYTHON_DOCS_URL, SearchIndex, default_docs_dir
from agentworld.errors import AgentWorldError

_INDEXES: dict[tuple[str, str], SearchIndex] = {}
_LOCK = threading.Lock()


def shared_index(docs: str | Path | None = None, url_prefix: str = PYTHON_DOCS_URL) -> SearchIndex:
    """The index of ``docs`` (default: the installed python3-doc), built once per process.

    Raises:
        AgentWorldError: no folder given and python3-doc is not installed.
    """
    folder = Path(docs) if docs is not None else default_docs_dir()
    if folder is None:
        raise AgentWorldError("no document folder given and python3-doc is not installed "
                              "(apt-get install python3-doc, or pass --docs)")
    key = (str(folder.resolve()), url_prefix)
    with _LOCK:
        if key not in _INDEXES:
            _INDEXES[key] = SearchIndex.from_folder(folder, url_prefix)
        return _INDEXES[key]


class SearchEnvironment:
    """One search episode: shared index, its own ``dict_memory``."""

    def __init__(self, index: SearchIndex, top_k: int = 10) -> None:
        self.tools: SearchTools | None = SearchTools(index, top_k=top_k)
        self.index = index

    def initial_observation(self) -> str:
        """Search starts empty: no results seen, no memory (the official prompt's initial state)."""
        return ""

    def step(self, action: str) -> str:
        """Run the tool call in ``action`` (a row action); a malformed one answers ``Error: …``."""
        if self.tools is None:
            raise AgentWorldError("the search environment is closed")
        try:
            call = parse_action(action)
        except ToolError as exc:
            return f"Error: {exc}"
        return self.tools.call(call.tool, call.arguments)

    def close(self) -> None:
        """Forget the episode's memory (idempotent); the shared index stays for other episodes."""
        self.tools = None


def open_environment(seed: int = 0, *, docs: str | Path | None = None, url_prefix: str = PYTHON_DOCS_URL,
                     top_k: int = 10, index: SearchIndex | None = None) -> SearchEnvironment:
    """A fresh episode over ``index`` (or the shared index of ``docs``). ``seed`` is accepted for the
    protocol and unused: BM25 over a fixed folder has no randomness."""
    del seed
    return SearchEnvironment(index if index is not None else shared_index(docs, url_prefix), top_k=top_k)

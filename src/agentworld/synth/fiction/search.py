"""A fictional search world: BM25 over the bible's documents, the official tools, the bible's ledger.

Why reuse :class:`~agentworld.envs.search_index.SearchIndex` and
:class:`~agentworld.domains.search.tools.SearchTools`: results and pages then come in exactly the format
the search domain's recordings (and its rules) use, so a fictional world trains the same skills. The
grounded answer (what these tools return) is the truth; a world model, when given, renders or
paraphrases with the bible's facts in its prompt, and :class:`~agentworld.sim.session.Simulator`
checks each rendering against :class:`~agentworld.synth.fiction.ledger.BibleLedger` (re-ask, repair).
"""

from __future__ import annotations

from typing import Any

from agentworld.domains.search import PLUGIN as SEARCH_PLUGIN
from agentworld.domains.search.tools import SearchTools
from agentworld.domains.spec import ControlSpec, WorldSpec
from agentworld.envs.search_index import Document, SearchIndex
from agentworld.models.base import ChatBackend
from agentworld.models.cache import ResponseCache
from agentworld.sim.session import Simulator
from agentworld.synth.fiction.bible import Bible, label, render_value
from agentworld.synth.fiction.ledger import BibleLedger

MAX_PROMPT_FACTS = 400
"""Facts (and page lines) put in the world model's prompt at most; the ledger still holds all of them."""


class FictionSearchWorld:
    """The search side of a bible: an index, grounded tools, a world spec and simulators."""

    def __init__(self, bible: Bible, top_k: int = 10) -> None:
        self.bible = bible
        self.top_k = top_k
        self.index = SearchIndex([Document(url=bible.url(d), title=d.title, text=d.text)
                                  for d in bible.documents])

    def tools(self) -> SearchTools:
        """A fresh episode's grounded tools (its own ``dict_memory``)."""
        return SearchTools(self.index, top_k=self.top_k)

    def truth(self, tool: str, arguments: dict[str, Any]) -> str:
        """The grounded answer of one search or extraction (memory calls get a fresh memory)."""
        return self.tools().call(tool, arguments)

    def ledger(self, spec: WorldSpec | None = None) -> BibleLedger:
        return BibleLedger(self.bible, self.truth)

    def spec(self) -> WorldSpec:
        """The world for the simulator: the search domain, the bible's facts and pages as world facts."""
        facts = [f"This is the fictional world of {self.bible.topic}; only its pages exist."]
        facts += [f"The {label(a)} of {e.name} is {render_value(v)}." for e in self.bible.entities
                  for a, v in e.attributes.items()]
        facts += [f"Page {self.bible.url(d)} is titled {d.title!r}." for d in self.bible.documents]
        return WorldSpec(domain=SEARCH_PLUGIN.name, name=f"fiction:{self.bible.topic}",
                         controls=ControlSpec(facts=facts[:MAX_PROMPT_FACTS]))

    def simulator(self, model: ChatBackend, *, cache: ResponseCache | None = None,
                  max_reasks: int = 1) -> Simulator:
        """A simulator whose answers the bible's ledger checks; call ``reset(world.spec())`` first."""
        return Simulator(model, cache=cache, max_reasks=max_reasks, ledger_factory=self.ledger)

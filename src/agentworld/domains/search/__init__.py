"""The search domain: ``web_search``, ``web_extractor`` and ``dict_memory`` over a local index."""

from agentworld.domains.base import DomainPlugin

PLUGIN = DomainPlugin(
    name="search",
    display="Search",
    rules="agentworld.domains.rules:SEARCH_RULES",
    recorder="agentworld.domains.search.record:COMMAND",
)

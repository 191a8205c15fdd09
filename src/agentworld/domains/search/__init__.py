"""The search domain: a real local search engine (BM25 over python3-doc) and its three official tools.

Light on purpose: only the plugin record is defined here; the index, the tools, the recorder and the
rules are named by reference and imported when used.
"""

from agentworld.domains.base import DomainPlugin
from agentworld.domains.error_patterns import COMMON_ERRORS, SEARCH_TOOL_ERRORS

PLUGIN = DomainPlugin(
    name="search",
    display="Search",
    rules="agentworld.domains.search.rules:RULES",
    retrieval_keys="agentworld.domains.search.keys:KEYS",
    environment="agentworld.domains.search.env:open_environment",
    routing="agentworld.domains.search.routing:decide",
    recorder="agentworld.domains.search.record:COMMAND",
    corpus="corpus.jsonl",
    heldout_scenarios="scenarios/heldout.jsonl",
    actions="agentworld.domains.search.actions:ACTIONS",
    error_patterns=(*COMMON_ERRORS, *SEARCH_TOOL_ERRORS),
    probes="agentworld.domains.search.probes:generate",
    extra={"vocabulary": "agentworld.domains.search.vocabulary:VOCABULARY"},
)

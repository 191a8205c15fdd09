"""The web domain: BrowserGym actions on headless Chromium over local sites (a shop and MiniWoB++).

Real: environment, routing, recorder (``agentworld record web``), shipped corpus, rules.
"""

from agentworld.domains.base import DomainPlugin
from agentworld.domains.error_patterns import COMMON_ERRORS

PLUGIN = DomainPlugin(
    name="web", display="Web",
    rules="agentworld.domains.web.rules:RULES",
    environment="agentworld.domains.web.env:open_environment",
    routing="agentworld.domains.web.routing:decide",
    recorder="agentworld.domains.web.record:COMMAND",
    corpus="corpus.jsonl",
    heldout_scenarios="scenarios/heldout.jsonl",
    error_patterns=(*COMMON_ERRORS, r"net::ERR_", r"\b404 (?i:not found)\b"),
    gui=True,
    pip_extra="web",
    probes="agentworld.domains.web.probes:generate",
    extra={"vocabulary": "agentworld.domains.web.vocabulary:VOCABULARY"},
)

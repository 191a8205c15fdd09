"""The web domain: browser actions observed as an accessibility tree."""

from agentworld.domains.base import DomainPlugin
from agentworld.domains.error_patterns import COMMON_ERRORS

PLUGIN = DomainPlugin(name="web", display="Web", rules="agentworld.domains.rules:TREE_RULES",
                      error_patterns=(*COMMON_ERRORS, r"net::ERR_", r"\b404 (?i:not found)\b"), gui=True)

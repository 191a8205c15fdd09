"""The SWE domain: a coding agent's tools (shell, file view and edit, search) on a repository."""

from agentworld.domains.base import DomainPlugin
from agentworld.domains.error_patterns import SHELL_ERRORS

PLUGIN = DomainPlugin(name="swe", display="SWE", action_word="command",
                      rules="agentworld.domains.rules:GENERIC", error_patterns=SHELL_ERRORS)

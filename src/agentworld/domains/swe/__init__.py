"""The SWE domain: a coding agent's tools (shell, file view and edit, search) on a repository."""

from agentworld.domains.base import DomainPlugin

PLUGIN = DomainPlugin(name="swe", display="SWE", action_word="command",
                      rules="agentworld.domains.rules:GENERIC")

"""The OS domain: prompt-only (no desktop here), scored by accessibility-tree shape."""

from agentworld.domains.base import DomainPlugin
from agentworld.domains.error_patterns import COMMON_ERRORS, SHELL_ERRORS

PLUGIN = DomainPlugin(name="os", display="OS", action_word="command",
                      rules="agentworld.domains.rules:TREE_RULES",
                      real_note="no desktop environment here: the domain is simulated only",
                      error_patterns=COMMON_ERRORS + SHELL_ERRORS, gui=True)

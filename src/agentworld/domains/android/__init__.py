"""The Android domain: prompt-only (no emulator here), scored by accessibility-tree shape."""

from agentworld.domains.base import DomainPlugin
from agentworld.domains.error_patterns import COMMON_ERRORS

PLUGIN = DomainPlugin(name="android", display="Android", rules="agentworld.domains.rules:TREE_RULES",
                      real_note="no Android emulator here: the domain is simulated only",
                      error_patterns=(*COMMON_ERRORS, r"has stopped", r"isn't responding"), gui=True)

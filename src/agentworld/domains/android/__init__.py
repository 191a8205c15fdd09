"""The Android domain: prompt-only (no emulator here), scored by accessibility-tree shape."""

from agentworld.domains.base import DomainPlugin

PLUGIN = DomainPlugin(name="android", display="Android", rules="agentworld.domains.rules:TREE_RULES",
                      real_note="no Android emulator here: the domain is simulated only",
                      error_patterns=(r"has stopped", r"isn't responding"), gui=True)

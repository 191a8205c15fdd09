"""``python -m agentworld`` is the ``agentworld`` command."""

from agentworld.cli import main

main()

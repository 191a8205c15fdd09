"""agentworld: language world models for agents."""

__version__ = "0.1.0"

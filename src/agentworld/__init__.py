"""agentworld: language world models for agents."""

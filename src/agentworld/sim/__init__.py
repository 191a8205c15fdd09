"""agentworld.sim"""

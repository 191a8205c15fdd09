"""agentworld.envs"""

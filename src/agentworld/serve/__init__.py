"""agentworld.serve"""

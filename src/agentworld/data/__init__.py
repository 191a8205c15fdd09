"""agentworld.data"""

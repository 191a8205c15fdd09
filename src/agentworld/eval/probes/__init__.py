"""``agentworld eval probes``: verify a world model by rules, with generated probes.

``config`` (the typed options), ``command`` (generate, run, judge, resumably) and ``report``.
"""

"""``agentworld eval compare``: several run folders over the same samples, side by side, with intervals.

``config`` (the typed options), ``command`` (the comparison), ``runs`` (reading run folders),
``stats`` (paired bootstrap), ``render`` (terminal and HTML).
"""

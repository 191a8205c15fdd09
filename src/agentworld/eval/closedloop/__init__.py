"""``agentworld eval closed-loop``: the sim-to-real gap when one agent drives the real environment and
the simulator from the same state.

``config`` (the typed options), ``command`` (select tasks, run), ``tasks``, ``agent``, ``episode``,
``runner`` (concurrent, resumable), ``score``, ``render`` (the HTML page), ``truth`` (mock ground truth).
"""

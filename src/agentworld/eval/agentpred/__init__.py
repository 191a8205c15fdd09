"""``agentworld eval agent-predictions``: how well the agent predicts what its own actions will show.

``config`` (the typed options), ``command`` (select tasks, run), ``tasks``, ``prompt``, ``episode``,
``imagine`` (an agent that predicts by imagining), ``runner`` (concurrent, resumable), ``summary``.
"""

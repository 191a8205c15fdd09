"""The verifiers environment ``agentworld-sim``: ``vf.load_environment("agentworld-sim", world=DIR)``.

verifiers imports an environment id as a module (``agentworld-sim`` -> ``agentworld_sim``) and calls its
``load_environment``; the environment itself lives in :mod:`agentworld.train.verifiers_env`.
"""

from agentworld.train.verifiers_env import load_environment

__all__ = ["load_environment"]

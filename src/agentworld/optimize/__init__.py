"""Optimise the world model's system prompts (AutoResearch-style propose, evaluate, refine).

``agentworld optimize prompts`` (:func:`run_optimize`): an optimizer model revises a domain's
prompt from its worst-scored training samples; each revision is scored on a training and a
validation split; validation decides the winner. The stored variants feed SFT
(``system_prompts_from`` in :class:`agentworld.train.config.SFTConfig`, read by
:func:`load_variants`).
"""

from __future__ import annotations

from agentworld.optimize.config import PromptOptConfig
from agentworld.optimize.prompts import run_optimize
from agentworld.optimize.split import split_samples, with_prompt
from agentworld.optimize.store import DomainSummary, load_variants

__all__ = ["DomainSummary", "PromptOptConfig", "load_variants", "run_optimize", "split_samples",
           "with_prompt"]

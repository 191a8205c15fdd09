"""verl's agent loop for the simulator: ``agent_name: agentworld`` runs an episode against the world model.

Import this module (or name it in verl's ``agent_loop_config_path`` YAML, as ``agentworld train
verl-config`` writes) and rows whose ``agent_name`` is ``agentworld`` are rolled out by
:class:`AgentWorldAgentLoop`: the policy served by verl acts, :class:`~agentworld.sim.session.Simulator`
answers with the world model, and the loop returns verl's ``AgentLoopOutput`` (see
:mod:`agentworld.train.verl_episode` for how the token ids and the response mask are built).

A row names its world in an ``agentworld`` column (or ``extra_info["agentworld"]``), a dict or its
JSON: ``world`` (a world folder: tools, initial state, tasks with success checks) and ``task_id``,
or ``spec`` (a :class:`~agentworld.sim.types.WorldSpec`) and ``task``; ``seed`` in both. Without a
task text the row's last user message is the task. The world model comes from the loop's config
(``model``, ``model_base_url``; the key from ``AGENTWORLD_MODEL_API_KEY``/``OPENAI_API_KEY``, never
from a file).
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register

from agentworld.endpoints import MODEL_KEY_ENV, build_backend
from agentworld.train.verl_episode import AGENT_NAME, row_world, run_verl_episode


@lru_cache(maxsize=16)
def _world_model(model: str, base_url: str | None) -> Any:
    """One backend per endpoint per process: verl builds a loop object per sample."""
    key = next((os.environ[name] for name in MODEL_KEY_ENV if os.environ.get(name)), None)
    return build_backend(model, base_url, key)


@register(AGENT_NAME)
class AgentWorldAgentLoop(AgentLoopBase):
    """Rolls a row's task out in the simulator; see the module docstring for the row and config fields.

    Args:
        model: world-model name (served model with ``model_base_url``; else a backend name).
        model_base_url: OpenAI-compatible base URL of the world model.
        max_turns: most agent turns per episode.
    """

    def __init__(self, *args: Any, model: str = "mock", model_base_url: str | None = None,
                 max_turns: int = 10, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.world_model_name = model
        self.world_model_url = model_base_url
        self.max_turns = int(max_turns)
        self.response_length = int(self.rollout_config.response_length)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
        """One episode for the row ``kwargs``; returns verl's ``AgentLoopOutput``."""
        spec, task, seed, check, task_id = row_world(kwargs)
        request_id = uuid4().hex

        async def generate(ids: list[int], params: dict[str, Any]) -> tuple[list[int], list[float] | None]:
            out = await self.server_manager.generate(request_id=request_id, prompt_ids=ids,
                                                     sampling_params=params)
            return list(out.token_ids), (list(out.log_probs) if out.log_probs is not None else None)

        episode = await run_verl_episode(
            generate, self.tokenizer, _world_model(self.world_model_name, self.world_model_url), spec,
            task=task, seed=seed, max_turns=self.max_turns, response_length=self.response_length,
            sampling_params=sampling_params, check=check,
            chat_template_kwargs=dict(getattr(self, "apply_chat_template_kwargs", None) or {}))
        return AgentLoopOutput(
            prompt_ids=episode.prompt_ids, response_ids=episode.response_ids,
            response_mask=episode.response_mask, response_logprobs=episode.response_logprobs,
            reward_score=episode.reward_score, num_turns=episode.num_turns, metrics=AgentLoopMetrics(),
            extra_fields={**episode.extra_fields, "task_id": task_id})

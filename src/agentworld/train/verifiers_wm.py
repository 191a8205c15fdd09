"""The verifiers environment for training the world model itself: one AgentWorldBench turn per row.

Why a second mode: the hybrid reward (:mod:`agentworld.train.rewards`) scores *predicted observations*
against the real ones, so it rewards the policy that plays the world model, not an agent. Here the
prompt of a row is the world-model request of one benchmark turn (:meth:`BenchSample.messages`), the
policy answers with ``<predicted_observation>…</predicted_observation>``, and the rubric scores it
with :class:`~agentworld.train.rewards.RuleReward` (0/1) or :class:`~agentworld.train.rewards.HybridReward`
(0.9 judge rubric + 0.1 rule; a judge that fails every retry scores 0.0 and sets ``judge_failed``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from agentworld.domains import domain_names
from agentworld.errors import AgentWorldError
from agentworld.schema import BenchSample, load_samples
from agentworld.train.rewards import HybridReward, RubricReward, RuleReward, completion_text

__all__ = ["load_world_model_environment", "sample_rows"]


def sample_rows(samples: Sequence[BenchSample]) -> list[dict[str, Any]]:
    """One verifiers row per benchmark turn: the world-model request, and the columns the rewards read."""
    return [{"prompt": [m.model_dump(include={"role", "content"}) for m in s.messages()],
             "answer": s.ground_truth,
             "info": {"sample_id": s.id, "domain": s.domain, "action": s.action,
                      "history": json.dumps(s.history())}} for s in samples]


def _assistant_text(completion: Any) -> str:
    messages = completion if isinstance(completion, list) else [completion]
    return completion_text([m if isinstance(m, dict) else m.model_dump() for m in messages])


def load_world_model_environment(data: str | Sequence[str], *, reward: Literal["rule", "hybrid"] = "rule",
                                 judge: str = "mock", judge_base_url: str | None = None,
                                 judge_api_key: str | None = None, **env_kwargs: Any) -> Any:
    """A ``vf.SingleTurnEnv`` over AgentWorldBench files whose policy is the world model.

    Args:
        data: AgentWorldBench JSONL files or folders.
        reward: ``rule`` (0/1 deterministic content) or ``hybrid`` (needs the judge endpoint).
        judge, judge_base_url, judge_api_key: the judge for ``hybrid`` (as ``--judge-*``).

    Raises:
        AgentWorldError: no data, or an unknown reward.
    """
    import verifiers as vf
    from datasets import Dataset

    paths = [data] if isinstance(data, str) else list(data)
    if not any(paths):
        raise AgentWorldError("agentworld-sim (mode=world-model): pass data=<AgentWorldBench JSONL file>")
    if reward not in ("rule", "hybrid"):
        raise AgentWorldError(f"agentworld-sim: unknown reward {reward!r} (known: rule, hybrid)")
    rows = sample_rows(load_samples([Path(p) for p in paths], known_domains=domain_names()))
    scorer: RuleReward | HybridReward = RuleReward()
    if reward == "hybrid":
        from agentworld.endpoints import build_backend

        scorer = HybridReward(RubricReward(build_backend(judge, judge_base_url, judge_api_key), model=judge))

    async def observation_reward(completion: Any, answer: str, info: dict[str, Any], state: Any) -> float:
        """The rule or hybrid reward of the predicted observation (0.0 when the judge failed)."""
        columns = {"ground_truth": [answer], "domain": [info["domain"]], "action": [info["action"]],
                   "history": [info["history"]]}
        value = scorer([None], [_assistant_text(completion)], **columns)
        result = (await value if not isinstance(value, list) else value)[0]
        state["judge_failed"] = result is None
        return float(result or 0.0)

    rubric = vf.Rubric(funcs=[observation_reward], weights=[1.0])
    return vf.SingleTurnEnv(dataset=Dataset.from_list(rows), rubric=rubric, env_id="agentworld-sim",
                            **env_kwargs)

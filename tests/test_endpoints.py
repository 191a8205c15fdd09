"""One endpoint value: configs hand out an ``Endpoint``; its backend is what ``build_backend`` builds."""

from __future__ import annotations

import asyncio
import pickle
from pathlib import Path

import pytest
from pydantic import SecretStr

from agentworld.corpus import corpus_path
from agentworld.endpoints import AgentEndpoint, Endpoint, JudgeEndpoint, ModelEndpoint, OptimizerEndpoint
from agentworld.errors import AgentWorldError
from agentworld.models.openai_compat import OpenAIBackend
from agentworld.models.pool import PoolBackend
from agentworld.models.retrieval import RetrievalBackend


class Everything(ModelEndpoint, JudgeEndpoint, AgentEndpoint, OptimizerEndpoint):
    """A config with every kind of endpoint, as the commands' configs combine them."""


def test_each_config_hands_out_its_endpoints_and_none_shows_a_key() -> None:
    config = Everything(model="wm", model_base_url="http://a/v1,http://b/v1", model_api_key=SecretStr("K1"),
                        judge_base_url="http://j/v1", agent_model="ag", agent_base_url="http://g/v1",
                        optimizer_model="op", optimizer_base_url="http://o/v1",
                        optimizer_api_key=SecretStr("K4"), model_corpus=[Path("c.jsonl")])
    world = config.model_endpoint()
    assert (world.model, world.base_url, world.secret(), world.corpus) == (
        "wm", "http://a/v1,http://b/v1", "K1", (Path("c.jsonl"),))
    assert config.judge_endpoint() == Endpoint("", "http://j/v1")  # no judge model named
    assert config.agent_endpoint() == Endpoint("ag", "http://g/v1")
    assert config.optimizer_endpoint().secret() == "K4"
    assert "K1" not in repr(world) and "K4" not in repr(config.optimizer_endpoint())
    assert pickle.loads(pickle.dumps(world)) == world  # a Ray actor builds its backends from it


def test_its_backend_is_the_served_model_a_pool_or_a_backend_by_name() -> None:
    single = Endpoint("m", "http://127.0.0.1:9/v1", SecretStr("K")).backend(max_retries=0)
    assert isinstance(single, OpenAIBackend) and single.model == "m"
    pool = Endpoint("m", "http://127.0.0.1:9/v1,http://127.0.0.1:10/v1").backend()
    assert isinstance(pool, PoolBackend)
    retrieval = Endpoint("retrieval", corpus=(corpus_path("terminal"),)).backend()
    assert isinstance(retrieval, RetrievalBackend)
    with pytest.raises(AgentWorldError, match="--model-corpus applies to the retrieval backend only"):
        Endpoint("m", "http://127.0.0.1:9/v1", corpus=(corpus_path("terminal"),)).backend()
    for backend in (single, pool):
        asyncio.run(backend.aclose())

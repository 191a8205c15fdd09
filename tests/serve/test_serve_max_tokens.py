"""A server-wide default ``max_tokens`` (``serve http/mcp --max-tokens``, ``shell --max-tokens``).

Why: a thinking world model spends 4-11k tokens before its answer, and a server's own default
``max_tokens`` may be far smaller, so without a default here every session whose spec names none
would get truncated, empty predictions. A spec's own ``max_tokens`` still wins.
"""

from __future__ import annotations

from typing import Any

import httpx

from agentworld.serve.config import HttpServeConfig
from agentworld.serve.http_api import create_app
from serving import SPEC, call, chat_server, serve


class Model:
    """A world model that records the ``max_tokens`` of each request."""

    def __init__(self) -> None:
        self.max_tokens: list[Any] = []

    def __call__(self, path: str, body: dict[str, Any], headers: Any) -> str:
        self.max_tokens.append(body.get("max_tokens"))
        return "<predicted_observation>{}</predicted_observation>"


def test_serve_http_sends_its_max_tokens_unless_the_spec_sets_one() -> None:
    model = Model()
    with chat_server(model) as mock:
        config = HttpServeConfig(model_base_url=f"{mock}/v1", model="mock", max_tokens=16384)
        with serve(create_app(config)) as url, httpx.Client(base_url=url, timeout=30) as client:
            for spec in (SPEC, {**SPEC, "max_tokens": 300}):
                sid = client.post("/v1/sessions", json={"spec": spec, "seed": 1}).json()["session_id"]
                step = client.post(f"/v1/sessions/{sid}/step", json={"action": call("get_user_details",
                                                                                     user_id="u1")})
                assert step.status_code == 200 and step.json()["source"] == "world_model", step.text
    assert model.max_tokens == [16384, 300]


def test_without_a_default_the_request_leaves_max_tokens_to_the_server() -> None:
    model = Model()
    with chat_server(model) as mock:
        config = HttpServeConfig(model_base_url=f"{mock}/v1", model="mock")
        with serve(create_app(config)) as url, httpx.Client(base_url=url, timeout=30) as client:
            sid = client.post("/v1/sessions", json={"spec": SPEC, "seed": 1}).json()["session_id"]
            client.post(f"/v1/sessions/{sid}/step", json={"action": call("get_user_details", user_id="u1")})
    assert model.max_tokens == [None]

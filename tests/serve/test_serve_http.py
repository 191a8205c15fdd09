"""The HTTP session API over real HTTP (uvicorn in a thread) against the mock model server."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from agentworld.serve.config import HttpServeConfig
from agentworld.serve.http_api import create_app
from agentworld.serve.mock_server import MockConfig, run_mock_server
from serving import SPEC, call, serve, wait_listening


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with run_mock_server(MockConfig()) as url:
        yield url


def mock_log(mock_url: str, full: bool = False) -> list[dict[str, Any]]:
    return httpx.get(f"{mock_url.removesuffix('/v1')}/_mock/requests", params={"full": int(full)}).json()


@contextmanager
def api(mock_url: str, **settings: Any) -> Iterator[httpx.Client]:
    config = HttpServeConfig(model_base_url=mock_url, model="mock", **settings)
    with serve(create_app(config)) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def test_create_step_state_close(mock_url: str) -> None:
    with api(mock_url) as client:
        assert client.get("/v1/health").json()["status"] == "ok"
        created = client.post("/v1/sessions", json={"spec": SPEC, "seed": 3})
        assert created.status_code == 200, created.text
        sid = created.json()["session_id"]
        action = call("get_user_details", user_id="ann_1")
        step = client.post(f"/v1/sessions/{sid}/step", json={"action": action})
        assert step.status_code == 200, step.text
        result = step.json()
        assert result["turn"] == 1 and result["source"] == "world_model" and not result["is_error"]
        assert "Command completed successfully." in result["observation"]
        state = client.get(f"/v1/sessions/{sid}/state").json()
        assert state["seed"] == 3 and state["turn"] == 1 and state["spec"]["domain"] == "mcp"
        assert len(state["history"]) == 1 and "ann_1" in state["history"][0]["action"]
        assert client.delete(f"/v1/sessions/{sid}").status_code == 200
        assert client.get(f"/v1/sessions/{sid}/state").status_code == 404


def test_bearer_token(mock_url: str) -> None:
    with api(mock_url, token=SecretStr("s3cret-token")) as client:
        assert client.get("/v1/health").status_code == 200  # open for load balancers
        assert client.post("/v1/sessions", json={"spec": SPEC}).status_code == 401
        wrong = client.post("/v1/sessions", json={"spec": SPEC}, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and "s3cret" not in wrong.text
        auth = {"Authorization": "Bearer s3cret-token"}
        ok = client.post("/v1/sessions", json={"spec": SPEC}, headers=auth)
        assert ok.status_code == 200, ok.text


def test_concurrent_sessions_are_isolated(mock_url: str) -> None:
    """32 sessions step concurrently with distinct actions; no history or model prompt mixes them."""
    n, steps = 32, 3
    httpx.post(f"{mock_url.removesuffix('/v1')}/_mock/reset")

    async def run() -> dict[int, str]:
        config = HttpServeConfig(model_base_url=mock_url, model="mock")
        with serve(create_app(config)) as url:
            async with httpx.AsyncClient(base_url=url, timeout=60) as client:
                async def episode(i: int) -> str:
                    created = await client.post("/v1/sessions", json={"spec": SPEC, "seed": i})
                    sid = created.json()["session_id"]
                    for k in range(steps):
                        r = await client.post(f"/v1/sessions/{sid}/step",
                                              json={"action": call("get_user_details", user_id=f"u{i}x{k}")})
                        assert r.status_code == 200 and r.json()["turn"] == k + 1, r.text
                    state = (await client.get(f"/v1/sessions/{sid}/state")).json()
                    ids = [re.findall(r"u\d+x\d+", t["action"]) for t in state["history"]]
                    assert ids == [[f"u{i}x{k}"] for k in range(steps)]
                    return sid

                sids = await asyncio.gather(*(episode(i) for i in range(n)))
        return dict(enumerate(sids))

    asyncio.run(run())
    requests = [e for e in mock_log(mock_url, full=True) if e.get("kind") == "world"]
    assert len(requests) == n * steps
    for entry in requests:
        text = " ".join(str(m.get("content")) for m in entry["messages"])
        owners = {m.split("x")[0] for m in re.findall(r"u\d+x\d+", text)}
        assert len(owners) == 1, f"model request mixes sessions: {sorted(owners)}"
        turns = len(re.findall(r"u\d+x\d+", text))
        assert 1 <= turns <= steps


def test_errors_and_server_keeps_serving(mock_url: str) -> None:
    with api(mock_url, max_body_bytes=4096) as client:
        sid = client.post("/v1/sessions", json={"spec": SPEC}).json()["session_id"]
        assert client.post("/v1/sessions/nope/step", json={"action": "x"}).status_code == 404
        assert client.get("/v1/sessions/nope/state").status_code == 404
        assert client.delete("/v1/sessions/nope").status_code == 404
        bad_type = client.post(f"/v1/sessions/{sid}/step", json={"action": 5})
        assert bad_type.status_code == 422
        bad_shape = client.post(f"/v1/sessions/{sid}/step", json={"action": {"tool": "x"}})
        assert bad_shape.status_code == 422 and bad_shape.json()["detail"], bad_shape.text
        not_json = client.post(f"/v1/sessions/{sid}/step", content=b"{not json",
                               headers={"content-type": "application/json"})
        assert not_json.status_code == 422
        before = len(mock_log(mock_url))
        unknown = client.post(f"/v1/sessions/{sid}/step", json={"action": call("fly_to_moon", when="now")})
        assert unknown.status_code == 200 and unknown.json()["is_error"], unknown.text
        invalid = client.post(f"/v1/sessions/{sid}/step", json={"action": call("get_user_details", user=1)})
        assert invalid.status_code == 200 and invalid.json()["is_error"], invalid.text
        assert len(mock_log(mock_url)) == before  # neither asked the model
        big = client.post(f"/v1/sessions/{sid}/step", json={"action": "x" * 10_000})
        assert big.status_code == 413
        chunked = client.post(f"/v1/sessions/{sid}/step", content=iter([b'{"action": "', b"y" * 8000, b'"}']),
                              headers={"content-type": "application/json"})
        assert chunked.status_code == 413
        ok = client.post(f"/v1/sessions/{sid}/step", json={"action": call("get_user_details", user_id="z")})
        assert ok.status_code == 200 and not ok.json()["is_error"], ok.text


def test_idle_expiry_and_session_limit(mock_url: str) -> None:
    with api(mock_url, idle_timeout_s=0.3, max_sessions=2) as client:
        first = client.post("/v1/sessions", json={"spec": SPEC}).json()["session_id"]
        client.post("/v1/sessions", json={"spec": SPEC})
        full = client.post("/v1/sessions", json={"spec": SPEC})
        assert full.status_code == 429 and "max-sessions" in full.json()["detail"]
        time.sleep(0.7)
        action = call("get_user_details", user_id="a")
        gone = client.post(f"/v1/sessions/{first}/step", json={"action": action})
        assert gone.status_code == 404 and "expired" in gone.json()["detail"]
        assert client.get("/v1/health").json()["sessions"] == 0
        again = client.post("/v1/sessions", json={"spec": SPEC})
        assert again.status_code == 200, again.text


@contextmanager
def counting_server() -> Iterator[tuple[str, list[str]]]:
    """A plain HTTP server on 127.0.0.1 that records every path it is asked for (and holds a secret)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    seen: list[str] = []

    async def secret(request: Request) -> JSONResponse:
        seen.append(request.url.path)
        return JSONResponse({"enum": ["INTERNAL-SECRET-42"]})

    with serve(Starlette(routes=[Route("/x.json", secret)])) as url:
        yield url, seen


def tool_with(prop: dict[str, Any], **schema: Any) -> dict[str, Any]:
    return {"domain": "mcp", "tools": [{"name": "t", "inputSchema": {
        "type": "object", "properties": {"s": prop}, **schema}}]}


def test_schema_references_are_never_fetched(mock_url: str) -> None:
    """A "$ref" to a URL is refused when the session is created; the URL's server sees nothing."""
    with counting_server() as (other, seen), api(mock_url) as client:
        for ref, reason in ((f"{other}/x.json", "points outside the schema"),
                            ("http://127.0.0.1:1/unreachable.json", "points outside the schema"),
                            ("#/$defs/missing", "points to nothing")):
            created = client.post("/v1/sessions", json={"spec": tool_with({"$ref": ref})})
            assert created.status_code == 422, created.text
            assert reason in created.json()["detail"] and "tools[0].inputSchema" in created.json()["detail"]
        backref_spec = tool_with({"type": "string", "pattern": r"(a)\1"})
        backref = client.post("/v1/sessions", json={"spec": backref_spec})
        assert backref.status_code == 422 and "not supported" in backref.json()["detail"]
        local = tool_with({"$ref": "#/$defs/word"}, **{"$defs": {"word": {"type": "string", "maxLength": 3}}})
        sid = client.post("/v1/sessions", json={"spec": local}).json()["session_id"]
        step = client.post(f"/v1/sessions/{sid}/step", json={"action": call("t", s="guess")}).json()
        assert step["is_error"] and "is too long" in step["observation"]
    assert seen == []


@contextmanager
def api_process(mock_url: str, *extra: str) -> Iterator[str]:
    """``agentworld serve http`` as a subprocess (its own GIL: this process watches it while it works)."""
    args = ["http", "--model-base-url", mock_url, "--model", "mock", "--port", "0", *extra]
    proc = subprocess.Popen([sys.executable, "-m", "agentworld", "serve", *args],
                            stderr=subprocess.PIPE, text=True)
    try:
        yield wait_listening(proc, r"listening on (http://127\.0\.0\.1:\d+)/v1", "/v1/health")
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_catastrophic_pattern_does_not_stall_the_server(mock_url: str) -> None:
    """``^(a+)+$`` against ``"a" * 40 + "!"``: the step is answered and /v1/health answers alongside it.

    With Python's backtracking ``re`` on the event loop this step took hours (time doubles per
    character) and froze every other request; benchmarks/bench_schema_guard.py has the numbers.
    """
    spec = tool_with({"type": "string", "pattern": "^(a+)+$"})
    with api_process(mock_url) as url:
        async def run() -> tuple[httpx.Response, httpx.Response]:
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                sid = (await client.post("/v1/sessions", json={"spec": spec})).json()["session_id"]
                step = asyncio.create_task(client.post(f"/v1/sessions/{sid}/step",
                                                       json={"action": call("t", s="a" * 40 + "!")}))
                await asyncio.sleep(0)
                health = await client.get("/v1/health")
                return health, await step

        health, step = asyncio.run(run())
    assert health.status_code == 200 and health.json()["sessions"] == 1
    assert step.status_code == 200 and step.json()["is_error"], step.text
    assert "does not match '^(a+)+$'" in step.json()["observation"]


def test_hostile_numbers_answer_422_naming_the_field(mock_url: str) -> None:
    faults = [({"kind": "pagination", "rate": 1, "params": {"page_size": 0}}, "page_size"),
              ({"kind": "truncated", "rate": 1, "params": {"keep_fraction": -1}}, "keep_fraction"),
              ({"kind": "rate_limit", "rate": 1, "params": {"retry_after_s": "soon"}}, "retry_after_s"),
              ({"kind": "timeout", "schedule": [0]}, "schedule"),
              ({"kind": "stale", "rate": 1, "params": {"evil": 1}}, "evil")]
    with api(mock_url) as client:
        for raw, field in ((b'{"seed": 1e400}', "seed"), (b'{"seed": 100000000000000000000}', "seed"),
                           (b'{"spec": {"temperature": -3}}', "temperature"),
                           (b'{"spec": {"max_tokens": 0}}', "max_tokens")):
            r = client.post("/v1/sessions", content=raw, headers={"content-type": "application/json"})
            assert r.status_code == 422 and field in r.json()["detail"], (raw, r.text)
        for fault, field in faults:
            r = client.post("/v1/sessions", json={"spec": {"controls": {"faults": [fault]}}})
            assert r.status_code == 422 and field in r.json()["detail"], (fault, r.text)
        assert client.get("/v1/health").json()["sessions"] == 0


def test_argument_size_is_capped_before_the_model(mock_url: str) -> None:
    with api(mock_url, max_argument_bytes=1024) as client:
        sid = client.post("/v1/sessions", json={"spec": SPEC}).json()["session_id"]
        before = len(mock_log(mock_url))
        big = client.post(f"/v1/sessions/{sid}/step",
                          json={"action": call("get_user_details", user_id="u" * 2000)})
        assert big.status_code == 413 and "--max-argument-bytes" in big.json()["detail"]
        assert len(mock_log(mock_url)) == before
        ok = client.post(f"/v1/sessions/{sid}/step", json={"action": call("get_user_details", user_id="u1")})
        assert ok.status_code == 200 and ok.json()["turn"] == 1


def test_retrieval_without_the_domain_refuses_the_session_up_front(tmp_path: Path) -> None:
    """`serve http --model retrieval` (shipped terminal and MCP corpora): an android session is a 422
    naming the fix, not a 502 at the first step; a terminal session works."""
    config = HttpServeConfig(model="retrieval")
    with serve(create_app(config)) as url, httpx.Client(base_url=url, timeout=30) as client:
        refused = client.post("/v1/sessions", json={"spec": {"domain": "android"}})
        assert refused.status_code == 422
        detail = refused.json()["detail"]
        assert "no android transitions" in detail and "--model-corpus" in detail
        created = client.post("/v1/sessions", json={"spec": {"domain": "terminal"}})
        assert created.status_code == 200, created.text

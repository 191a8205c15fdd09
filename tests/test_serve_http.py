"""The HTTP session API over real HTTP (uvicorn in a thread) against the mock model server."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from agentworld.serve.http_api import create_app
from agentworld.serve.mock_server import MockConfig, run_mock_server
from agentworld.serve.serve_cli import _bind
from agentworld.serve.sessions import SessionManagerConfig

TOOLS = json.loads((Path(__file__).parent / "fixtures" / "airline_tools.json").read_text())["tools"]
SPEC = {"domain": "mcp", "name": "airline", "tools": TOOLS, "initial_state": "An airline booking backend."}


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_name": tool, "arguments": arguments}


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Run an ASGI app with its lifespan in a thread on 127.0.0.1; yield its base URL."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
    sock = _bind("127.0.0.1", 0)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server failed to start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with run_mock_server(MockConfig()) as url:
        yield url


def mock_log(mock_url: str, full: bool = False) -> list[dict[str, Any]]:
    return httpx.get(f"{mock_url.removesuffix('/v1')}/_mock/requests", params={"full": int(full)}).json()


@contextmanager
def api(mock_url: str, **settings: Any) -> Iterator[httpx.Client]:
    config = SessionManagerConfig(model_base_url=mock_url, model="mock", **settings)
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
        config = SessionManagerConfig(model_base_url=mock_url, model="mock")
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
        chunked = client.post(f"/v1/sessions/{sid}/step", content=iter([b'{"action": "', b"y" * 8000, b'"}']))
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

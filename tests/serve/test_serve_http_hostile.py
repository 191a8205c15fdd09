"""The HTTP session API against hostile clients: impossible world names, foreign Host headers, cross-site
bodies — over real HTTP on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentworld.serve.config import HttpServeConfig
from agentworld.serve.http_api import create_app
from agentworld.serve.mock_server import MockConfig, run_mock_server
from serving import serve


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with run_mock_server(MockConfig()) as url:
        yield url


def test_impossible_world_names_answer_422_and_keep_the_connection(tmp_path: Path, mock_url: str) -> None:
    """A NUL byte or a 1,024-character component used to answer 500 and reset the keep-alive connection."""
    config = HttpServeConfig(model_base_url=mock_url, model="mock", worlds_root=tmp_path)
    with serve(create_app(config)) as url, httpx.Client(base_url=url, timeout=30) as client:
        cases = {"a\x00b": "NUL byte", "x" * 1024: "over the file-system limit of 255",
                 "ok/" + "é" * 200: "400 bytes"}
        for name, expected in cases.items():
            answer = client.post("/v1/sessions", json={"world": name})
            assert answer.status_code == 422 and expected in answer.json()["detail"], (name[:8], answer.text)
            assert answer.headers.get("connection") != "close"
        assert client.get("/v1/health").status_code == 200


def test_only_own_host_names_and_json_bodies_are_answered(mock_url: str) -> None:
    """DNS rebinding (a foreign Host), a foreign Origin and a cross-site text/plain body are refused."""
    config = HttpServeConfig(model_base_url=mock_url, model="mock", allowed_hosts=["sim.example"])
    with serve(create_app(config)) as url, httpx.Client(base_url=url, timeout=30) as client:
        port = url.rsplit(":", 1)[1]
        spec = {"spec": {"domain": "terminal"}}
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example"):
            assert client.get("/v1/health", headers={"Host": host}).status_code == 421, host
            refused = client.post("/v1/sessions", json=spec, headers={"Host": host})
            assert refused.status_code == 421 and "--allowed-host" in refused.text
        for host in (f"localhost:{port}", f"[::1]:{port}", f"127.0.0.1:{port}", "SIM.example",
                     "sim.example:1"):
            assert client.get("/v1/health", headers={"Host": host}).status_code == 200, host
        page = client.post("/v1/sessions", json=spec, headers={"Origin": "http://evil.example"})
        assert page.status_code == 403
        assert client.post("/v1/sessions", json=spec, headers={"Origin": "null"}).status_code == 403
        text = client.post("/v1/sessions", content=b'{"spec": {"domain": "terminal"}}',
                           headers={"Content-Type": "text/plain"})
        assert text.status_code == 415 and "application/json" in text.text
        assert client.get("/v1/health").json()["sessions"] == 0  # nothing was opened
        made = client.post("/v1/sessions", json=spec, headers={"Origin": f"http://localhost:{port}"})
        assert made.status_code == 200, made.text
        sid = made.json()["session_id"]
        assert client.delete(f"/v1/sessions/{sid}", headers={"Host": "evil.example"}).status_code == 421
        assert client.delete(f"/v1/sessions/{sid}").status_code == 200


def test_a_wildcard_bind_answers_any_host_unless_names_are_given(mock_url: str) -> None:
    from agentworld.serve.net import allowed_host_names

    assert allowed_host_names("0.0.0.0") is None
    assert allowed_host_names("0.0.0.0", ["sim.example"]) == {"localhost", "127.0.0.1", "::1", "sim.example"}
    assert allowed_host_names("10.0.0.5") == {"localhost", "127.0.0.1", "::1", "10.0.0.5"}
    assert allowed_host_names("[::1]") == {"localhost", "127.0.0.1", "::1"}
    with pytest.raises(ValueError, match="not a host name"):
        HttpServeConfig(model="mock", allowed_hosts=["http://sim.example/"])

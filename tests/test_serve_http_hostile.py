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
from test_serve_http import serve


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

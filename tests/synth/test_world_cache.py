"""``serve http --worlds-root`` parses a world once per version of its world.json, never its tasks."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx

from agentworld.serve.config import HttpServeConfig
from agentworld.serve.http_api import create_app
from agentworld.synth.world_cache import WorldSpecCache
from serving import serve
from synth_worlds import TASK, WORLD
from synth_worlds import write as write_into


def world(folder: Path, **changes: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return write_into(folder, {**WORLD, **changes}, [TASK])


def test_a_second_session_does_not_reparse_and_tasks_are_never_read(tmp_path: Path) -> None:
    root = tmp_path / "worlds"
    folder = world(root / "airline")
    with (folder / "tasks.jsonl").open("a") as handle:
        handle.write("{a task file this broken cannot be parsed\n")  # serving a session must not read it
    app = create_app(HttpServeConfig(model="scripted", worlds_root=root))
    with serve(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        for _ in range(3):
            made = client.post("/v1/sessions", json={"world": "airline"})
            assert made.status_code == 200, made.text
        assert app.state.worlds.parses == 1
        (folder / "world.json").write_text(json.dumps({**WORLD, "name": "airline-renamed"}))
        os.utime(folder / "world.json", ns=(1, 1))  # a changed file: parsed again
        made = client.post("/v1/sessions", json={"world": "airline"})
        assert made.status_code == 200, made.text
        sid = made.json()["session_id"]
        assert client.get(f"/v1/sessions/{sid}/state").json()["spec"]["name"] == "airline-renamed"
        assert app.state.worlds.parses == 2


def test_the_cache_is_bounded_least_recently_used_first(tmp_path: Path) -> None:
    cache = WorldSpecCache(maxsize=2)
    a, b, c = (world(tmp_path / n, name=n) for n in "abc")
    assert [cache.spec(x).name for x in (a, b, a, c)] == ["a", "b", "a", "c"]
    assert len(cache) == 2 and cache.parses == 3  # b was dropped, a kept (used more recently)
    cache.spec(a)
    assert cache.parses == 3
    cache.spec(b)
    assert cache.parses == 4 and len(cache) == 2

"""A pool of world-model endpoints: selection, health and backoff (fake clock), URL lists, and an eval run
over three real mock servers with one killed mid-run."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_rollout import TOOLS, WORLD, _agent
from typer.testing import CliRunner

from agentworld.cli_support import config_command, new_app
from agentworld.endpoints import ModelEndpoint, base_urls, build_backend
from agentworld.errors import AgentWorldError, BackendError
from agentworld.eval.cli import app
from agentworld.io import read_journal
from agentworld.models.base import ChatRequest, ChatResult
from agentworld.models.openai_compat import OpenAIBackend
from agentworld.models.pool import PoolBackend, PoolMember, choose, render_stats
from agentworld.redact import redact_url
from agentworld.schema import Message
from agentworld.serve.config import HttpServeConfig
from agentworld.serve.http_api import create_app
from agentworld.serve.mock_server import MockConfig, run_mock_server
from eval_helpers import bench_rows, write_bench
from serving import SPEC, call, chat_server, serve

REQUEST = ChatRequest(messages=(Message(role="user", content="hi"),))


class Clock:
    """A fake monotonic clock; ``sleep`` advances it instead of waiting."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class Fake:
    """A pool member whose answers are scripted: ``fail`` holds the errors to raise, in order."""

    def __init__(self, name: str, *, gate: asyncio.Event | None = None) -> None:
        self.base_url = f"http://{name}/v1"
        self.fail: list[BackendError] = []
        self.calls = 0
        self.alive = True
        self.probes = 0
        self.gate = gate

    async def complete(self, request: ChatRequest) -> ChatResult:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise self.fail.pop(0)
        return ChatResult(content=self.base_url, latency_s=0.01 * self.calls)

    async def probe(self) -> bool:
        self.probes += 1
        return self.alive

    async def aclose(self) -> None:
        pass


def _down(status: int | None = None) -> BackendError:
    return BackendError("connection error: ConnectError", retryable=True, status=status)


def _pool(members: list[Fake], clock: Clock, **options: Any) -> PoolBackend:
    return PoolBackend(members, name="openai:wm", clock=clock, sleep=clock.sleep, down_base_s=1.0,
                       down_max_s=8.0, **options)


def test_choose_prefers_fewest_in_flight_then_fewest_sent_then_untried() -> None:
    a, b, c = (PoolMember(i, f"u{i}", Fake(f"e{i}")) for i in range(3))
    a.outstanding, b.outstanding, c.outstanding = 2, 1, 1
    b.sent, c.sent = 5, 4
    assert choose([a, b, c], set(), 0.0) is c
    assert choose([a, b, c], {2}, 0.0) is b  # a request that failed on c goes elsewhere
    b.mark_down(0.0, 1.0, 8.0)
    assert choose([a, b, c], {2}, 0.0) is a
    a.mark_down(0.0, 1.0, 8.0)
    c.mark_down(0.5, 1.0, 8.0)
    assert choose([a, b, c], set(), 0.0) is b  # all down: the backoff that ends first; a tie: fewer in flight


def test_concurrent_requests_spread_by_least_outstanding() -> None:
    async def main() -> list[int]:
        gate = asyncio.Event()
        members = [Fake(f"e{i}", gate=gate) for i in range(3)]
        pool = _pool(members, Clock())
        tasks = [asyncio.ensure_future(pool.complete(REQUEST)) for _ in range(7)]
        await asyncio.sleep(0)
        in_flight = [e.outstanding for e in pool.endpoints]
        gate.set()
        await asyncio.gather(*tasks)
        assert [e.outstanding for e in pool.endpoints] == [0, 0, 0]
        return in_flight

    assert sorted(asyncio.run(main())) == [2, 2, 3]


def test_sequential_requests_rotate_over_the_endpoints() -> None:
    async def main() -> list[str]:
        pool = _pool([Fake(f"e{i}") for i in range(3)], Clock())
        return [(await pool.complete(REQUEST)).content for _ in range(6)]

    assert asyncio.run(main()) == ["http://e0/v1", "http://e1/v1", "http://e2/v1"] * 2


def test_a_failed_endpoint_fails_over_is_marked_down_and_probed_after_a_doubling_backoff() -> None:
    clock = Clock()
    members = [Fake("e0"), Fake("e1")]
    members[0].fail = [_down()]
    members[0].alive = False
    pool = _pool(members, clock)

    async def main() -> None:
        result = await pool.complete(REQUEST)
        assert result.content == "http://e1/v1" and result.attempts == 2 and result.source == "openai:wm"
        assert not pool.endpoints[0].up and clock.slept == []  # failover to a healthy endpoint: no wait
        for _ in range(3):
            assert (await pool.complete(REQUEST)).content == "http://e1/v1"
        assert members[0].probes == 0  # backoff (1 s) not over yet
        clock.now = 1.0
        await pool.complete(REQUEST)
        await asyncio.sleep(0)
        assert members[0].probes == 1 and not pool.endpoints[0].up
        assert pool.endpoints[0].retry_at == 3.0  # second failure in a row: 2 s
        clock.now = 2.9
        await pool.complete(REQUEST)
        await asyncio.sleep(0)
        assert members[0].probes == 1
        members[0].alive = True
        clock.now = 3.0
        await pool.complete(REQUEST)
        await asyncio.sleep(0)
        assert members[0].probes == 2 and pool.endpoints[0].up
        assert (await pool.complete(REQUEST)).content == "http://e0/v1"  # back in rotation, least sent

    asyncio.run(main())
    stats = pool.endpoint_stats()
    assert stats[0]["errors"] == 1 and stats[0]["failovers"] == 1 and stats[0]["down"] is False
    assert stats[0]["down_periods"] == [{"from_s": 0.0, "to_s": 3.0}] and stats[0]["down_s"] == 3.0
    assert stats[1]["errors"] == 0 and stats[1]["ok"] == 7 and stats[1]["p50_ms"] is not None


def test_user_errors_fail_at_once_and_429_goes_elsewhere_without_marking_down() -> None:
    clock = Clock()
    members = [Fake("e0"), Fake("e1")]
    pool = _pool(members, clock)
    members[0].fail = [BackendError("HTTP 400: bad request", retryable=False, status=400)]
    with pytest.raises(BackendError, match="HTTP 400"):
        asyncio.run(pool.complete(REQUEST))
    assert members[1].calls == 0 and pool.endpoints[0].up
    members[1].fail = [_down(429)]
    members[0].calls = 0
    result = asyncio.run(pool.complete(REQUEST))
    assert result.content == "http://e0/v1" and pool.endpoints[1].up and pool.endpoints[1].failovers == 1


def test_all_down_waits_for_the_earliest_backoff_then_gives_up_after_the_budget() -> None:
    clock = Clock()
    members = [Fake("e0"), Fake("e1")]
    members[0].fail = [_down(503)]
    members[1].fail = [_down()]
    pool = _pool(members, clock, max_retries=2, backoff_base_s=0.5)
    result = asyncio.run(pool.complete(REQUEST))
    assert result.attempts == 3 and clock.now >= 1.0  # waited for e0's backoff, then it answered
    assert pool.endpoints[0].up and not pool.endpoints[1].up

    for member in members:
        member.fail = [_down(500)] * 10
    clock.slept.clear()
    with pytest.raises(BackendError, match=r"gave up after 4 attempts over 2 endpoints: connection error"):
        asyncio.run(pool.complete(REQUEST))
    # one backoff between the two rounds (0.25-0.5 s), none after the last; the other sleeps wait for a
    # down endpoint's backoff (0.5-0.75 s, then 1 s)
    assert len([s for s in clock.slept if s <= 0.5]) == 1


def test_url_lists_repeat_commas_and_files(tmp_path: Path) -> None:
    listed = tmp_path / "urls.txt"
    listed.write_text("# the pool\nhttp://a:8000/v1\n\nhttp://b:8000/v1  # second GPU\n")
    assert base_urls("http://x/v1") == ["http://x/v1"]
    assert base_urls(["http://x/v1", "http://y/v1,http://z/v1"]) == ["http://x/v1", "http://y/v1", "http://z/v1"]
    assert base_urls([f"@{listed}", "http://c/v1"]) == ["http://a:8000/v1", "http://b:8000/v1", "http://c/v1"]
    with pytest.raises(ValueError, match=r"listed twice"):
        base_urls("http://x/v1,http://x/v1")
    with pytest.raises(ValueError, match=r"'ftp://\*\*\*@y' is not an http\(s\) URL"):
        base_urls("http://x/v1,ftp://u:KEY@y")
    (tmp_path / "bad.txt").write_text("http://a/v1\nlocalhost:9\n")
    with pytest.raises(ValueError, match=r"bad.txt:2: 'localhost:9' is not"):
        base_urls(f"@{tmp_path / 'bad.txt'}")
    with pytest.raises(ValueError, match="cannot read the list of URLs"):
        base_urls(f"@{tmp_path / 'missing.txt'}")
    endpoint = ModelEndpoint(model="wm", model_base_url=[f"@{listed}"])  # type: ignore[arg-type]
    assert endpoint.model_base_url == "http://a:8000/v1,http://b:8000/v1"
    assert ModelEndpoint(model="wm", model_base_url="http://x/v1").model_base_url == "http://x/v1"


def test_build_backend_pool_and_redaction() -> None:
    single = build_backend("wm", "http://127.0.0.1:9/v1")
    assert isinstance(single, OpenAIBackend) and single.max_retries == 5
    pool = build_backend("wm", "http://u:SECRETKEY1@127.0.0.1:9/v1,http://127.0.0.1:10/v1", "sk-KEY",
                         max_retries=3)
    assert isinstance(pool, PoolBackend) and pool.name == single.name == "openai:wm"
    assert pool.max_retries == 3 and all(e.backend.max_retries == 0 for e in pool.endpoints)  # type: ignore[attr-defined]
    text = render_stats(pool.endpoint_stats()) + repr(pool)
    assert "SECRETKEY1" not in text and "http://***@127.0.0.1:9/v1" in text
    assert redact_url("http://u:K@a/v1,http://b/v1?api_key=K") == "http://***@a/v1,http://b/v1?api_key=%2A%2A%2A"
    with pytest.raises(AgentWorldError, match="listed twice"):
        build_backend("wm", "http://a/v1,http://a/v1")
    for backend in (single, pool):
        asyncio.run(backend.aclose())


# -- three real mock servers, one killed mid-run -------------------------------------------------------


@contextlib.contextmanager
def _mock_process(data: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    proc = subprocess.Popen([sys.executable, "-m", "agentworld", "serve", "mock", "--data", str(data),
                             "--latency-ms", "150"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    try:
        assert proc.stdout is not None
        match = re.search(r"(http://127\.0\.0\.1:\d+/v1)", proc.stdout.readline())
        assert match, "mock server did not start"
        yield match.group(1), proc
    finally:
        proc.kill()
        proc.wait()


def _served(url: str) -> int:
    return int(httpx.get(url.removesuffix("/v1") + "/_mock/stats", timeout=10).json().get("requests", 0))


def _kill_after(url: str, proc: subprocess.Popen[str], requests: int, done: threading.Event) -> None:
    """Kill the server once it has answered ``requests`` requests (decided by its own count, not a timer)."""
    while not done.is_set():
        try:
            if _served(url) >= requests:
                proc.send_signal(signal.SIGKILL)
                return
        except httpx.TransportError:
            pass
        done.wait(0.005)


def test_eval_run_over_a_pool_survives_a_killed_endpoint(tmp_path: Path) -> None:
    data = write_bench(tmp_path / "data", bench_rows(16))  # 48 samples
    with contextlib.ExitStack() as stack:
        (a, _), (b, victim), (c, _) = (stack.enter_context(_mock_process(data)) for _ in range(3))
        for url in (a, b, c):  # up before the run: the pool's first requests find them listening
            while True:
                try:
                    _served(url)
                    break
                except httpx.TransportError:
                    threading.Event().wait(0.05)
        (tmp_path / "pool.txt").write_text(f"{b}\n{c}\n")
        done = threading.Event()
        killer = threading.Thread(target=_kill_after, args=(b, victim, 4, done))
        killer.start()
        try:
            result = CliRunner().invoke(app, [
                "run", "--data", str(data), "--model-base-url", a,
                "--model-base-url", f"@{tmp_path / 'pool.txt'}",
                "--model", "wm", "--no-judge", "--out", str(tmp_path / "run"), "--no-progress",
                "--concurrency", "6", "--backoff-s", "0.01"])
        finally:
            done.set()
            killer.join()
        assert result.exit_code == 0, result.output
        assert victim.poll() is not None, "the killed endpoint should be dead by the end of the run"
        healthy = [_served(a), _served(c)]
    rows = list(read_journal(tmp_path / "run" / "predictions.jsonl"))
    assert len(rows) == 48 and all(not r.get("error") and r["prediction"] for r in rows)
    stats = {s["url"]: s for s in json.loads((tmp_path / "run" / "endpoints.json").read_text())["endpoints"]}
    assert stats[b]["errors"] >= 1 and stats[b]["failovers"] >= 1 and stats[b]["down_periods"]
    assert stats[a]["errors"] == stats[c]["errors"] == 0
    assert stats[a]["ok"] + stats[b]["ok"] + stats[c]["ok"] == 48
    assert abs(healthy[0] - healthy[1]) <= 0.2 * max(healthy), (healthy, stats)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["infer"]["model_base_url"] == f"{a},{b},{c}"


def test_run_identity_ignores_pool_members_but_a_moved_single_url_is_refused(tmp_path: Path) -> None:
    data = write_bench(tmp_path / "data", bench_rows(2))

    def run(out: str, url: str) -> Any:
        return CliRunner().invoke(app, ["run", "--data", str(data), "--model-base-url", url, "--model", "wm",
                                        "--no-judge", "--out", str(tmp_path / out), "--no-progress"])

    with run_mock_server(MockConfig(data=[data])) as a, run_mock_server(MockConfig(data=[data])) as b, \
            run_mock_server(MockConfig(data=[data])) as c:
        assert run("single", a).exit_code == 0
        moved = run("single", b)
        assert moved.exit_code == 2 and "model_base_url" in moved.output
        assert run("single", f"{a},{b}").exit_code == 0  # one endpoint became a pool: same run
        assert run("pool", f"{a},{b}").exit_code == 0
        assert run("pool", f"{b},{c}").exit_code == 0  # members changed: same run
        assert run("pool", c).exit_code == 0  # back to one endpoint: same run
    rows = list(read_journal(tmp_path / "pool" / "predictions.jsonl"))
    assert len(rows) == 6 and all(r["prediction"] for r in rows)  # nothing was predicted twice


def test_serve_http_over_a_pool_shows_each_endpoint() -> None:
    with run_mock_server(MockConfig()) as a, run_mock_server(MockConfig()) as b:
        config = HttpServeConfig(model_base_url=[a, b], model="mock")  # type: ignore[arg-type]
        with serve(create_app(config)) as url, httpx.Client(base_url=url, timeout=30) as client:
            sid = client.post("/v1/sessions", json={"spec": SPEC, "seed": 1}).json()["session_id"]
            for i in range(4):
                action = call("get_user_details", user_id=f"user_{i}")
                step = client.post(f"/v1/sessions/{sid}/step", json={"action": action})
                assert step.status_code == 200 and step.json()["source"] == "world_model", step.text
            endpoints = client.get("/v1/endpoints").json()["endpoints"]
        assert [e["url"] for e in endpoints] == [a, b]
        assert [e["requests"] for e in endpoints] == [2, 2] and all(e["errors"] == 0 for e in endpoints)
        assert _served(a) == _served(b) == 2


def test_every_model_base_url_option_repeats() -> None:
    """Every command's world model is a ModelEndpoint, and its repeatable option comes from cli_support:
    a command's own code never parses the list."""
    seen: list[str | None] = []
    command = new_app("test")
    config_command(command, ModelEndpoint, lambda config: seen.append(config.model_base_url), name="go")
    config_command(command, ModelEndpoint, lambda config: None, name="other")
    args = ["go", "--model", "wm", "--model-base-url", "http://a/v1,http://b/v1",
            "--model-base-url", "http://c/v1"]
    result = CliRunner().invoke(command, args)
    assert result.exit_code == 0, result.output
    assert seen == ["http://a/v1,http://b/v1,http://c/v1"]
    one = CliRunner().invoke(command, ["go", "--model", "wm", "--model-base-url", "http://u:KEY@a/v1?x=1"])
    assert one.exit_code == 0 and seen[-1] == "http://u:KEY@a/v1?x=1"  # one URL: as given
    assert CliRunner().invoke(command, ["go", "--model", "wm"]).exit_code == 0 and seen[-1] is None
    bad = CliRunner().invoke(command, [*args[:-1], "http://a/v1"])
    assert isinstance(bad.exception, AgentWorldError)  # the root command makes it one red line, exit 2
    assert str(bad.exception) == "--model-base-url: Value error, http://a/v1 is listed twice"


def test_train_rollout_over_a_pool_writes_its_endpoint_stats(tmp_path: Path) -> None:
    from agentworld.cli import app as root

    worlds: list[str] = []

    def answer(path: str, body: dict[str, Any], headers: Any) -> str:
        if path.startswith("/agent/"):
            return _agent(None) if len(body["messages"]) <= 2 else "All done."  # type: ignore[arg-type]
        worlds.append(path.split("/")[1])
        return WORLD

    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"tools": TOOLS}))
    out = tmp_path / "episodes.jsonl"
    with chat_server(answer) as url:
        result = CliRunner().invoke(root, [
            "train", "rollout", "--tools", str(tools), "--out", str(out), "--episodes", "4",
            "--max-turns", "3",
            "--agent-base-url", f"{url}/agent/v1", "--agent-model", "agent", "--model", "world",
            "--model-base-url", f"{url}/w1/v1", "--model-base-url", f"{url}/w2/v1"])
    assert result.exit_code == 0, result.output
    stats = json.loads(out.with_suffix(".endpoints.json").read_text())["endpoints"]
    assert [s["url"] for s in stats] == [f"{url}/w1/v1", f"{url}/w2/v1"]
    assert [s["ok"] for s in stats] == [worlds.count("w1"), worlds.count("w2")]
    assert worlds.count("w1") >= 1 and worlds.count("w2") >= 1
    assert "world-model endpoints:" in result.stderr

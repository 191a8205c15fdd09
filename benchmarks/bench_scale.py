"""Thousands of concurrent sessions on one ``serve http`` / ``serve mcp`` process against a slow world model.

Why: an RL run holds hundreds to thousands of episodes open at once. Each open session costs the
server memory, and every step pays the framework's own time on top of the model's; when the
event loop is busy, every session's step waits. This measures, per surface and session count:

* framework overhead per step, p50 and p99 — the server's time for the step (``Server-Timing``,
  request received → response start) minus the model call's own time (``StepResult.latency_s``:
  the HTTP call to the mock, its 500 ms included). ``serve http`` answers it with the step; MCP
  results do not carry it, so the wrapper records it per step inside the server. Also shown:
  server time minus the mock's nominal latency (an upper bound that also counts the mock's own
  lateness on a loaded machine);
* memory per session: the server's RSS after all sessions are open and have stepped, minus its
  RSS before the first one, divided by the sessions;
* event-loop lag, measured inside the server: the server runs in a wrapper process (this file,
  ``--serve``) that ticks a 50 ms timer on the server's loop and records how late each tick is;
* errors: any non-200 answer, MCP error or transport error (there must be none).

Also shown: each process's CPU time per step while stepping (server / mock / this driver), so the
figures can be scaled to another machine.

Setup: the mock model server in its own process (``--latency-ms``, default 500), the server in
another, this process drives the sessions (one aiohttp pool: the agents' own client costs as little
CPU as it can, as they would run elsewhere). Agents think between steps
(``--think-s``, default: sessions / ``--rate`` s, so the whole run asks ``--rate`` steps/s of the
machine, 100 by default); sessions start spread over one think time and keep that spread after the
all-open barrier, so they do not tick in lockstep.

    python benchmarks/bench_scale.py [--sessions 1000 4000] [--surfaces http mcp mcp-modern] [--steps 3]
        [--rate 100]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import multiprocessing as mp
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import orjson

TOOLS = [{"name": "get_user_details", "description": "Get the details of a user.",
          "inputSchema": {"type": "object", "properties": {"user_id": {"type": "string"}},
                          "required": ["user_id"]}}]
TICK_S = 0.05
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
MODERN = "2026-07-28"
"""The stateless MCP revision: one self-contained POST per request (no initialize, no MCP session)."""
MODERN_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
                  "Mcp-Method": "tools/call", "Mcp-Name": "get_user_details"}
MODERN_META = {"io.modelcontextprotocol/protocolVersion": MODERN,
               "io.modelcontextprotocol/clientCapabilities": {}}
SERVE_COMMAND = {"http": "http", "mcp": "mcp", "mcp-modern": "mcp"}
"""The ``serve`` sub-command behind each surface (mcp-modern: the same server, stateless clients)."""


# -- the server wrapper: the real CLI, plus a loop-lag monitor and RSS at /_bench ------------------

def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _Bench:
    """ASGI wrapper: ``GET /_bench`` answers RSS and loop-lag stats (and starts/resets the monitor)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.lags: list[float] = []
        self.task: asyncio.Task[None] | None = None

    async def _monitor(self) -> None:
        while True:
            t0 = time.perf_counter()
            await asyncio.sleep(TICK_S)
            self.lags.append(time.perf_counter() - t0 - TICK_S)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/_bench":
            await self.app(scope, receive, send)
            return
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._monitor())
        lags = sorted(self.lags)
        body = {"rss": _rss_bytes(), "ticks": len(lags), "cpu_s": time.process_time(),
                "lag_p50_ms": 1000 * lags[len(lags) // 2] if lags else 0.0,
                "lag_p99_ms": 1000 * lags[min(len(lags) - 1, int(0.99 * len(lags)))] if lags else 0.0,
                "lag_max_ms": 1000 * lags[-1] if lags else 0.0}
        if scope.get("query_string") == b"reset=1":
            self.lags.clear()
        if scope.get("query_string") == b"model=1":
            body["model_s"] = MODEL_S
        payload = json.dumps(body).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": payload})


MODEL_S: dict[str, float] = {}
"""The model time of each step the server ran, by the step's ``user_id`` argument (unique per step)."""


def serve_wrapped(argv: list[str]) -> None:
    """Run ``agentworld serve ARGV`` with :class:`_Bench` around its app and steps' model time recorded.

    The record lets MCP steps (whose results carry no ``latency_s``) get the exact overhead too.
    """
    from agentworld.serve import net
    from agentworld.sim.session import Simulator

    plain_step = Simulator.astep

    async def astep(self: Simulator, action: Any) -> Any:
        result = await plain_step(self, action)
        if isinstance(action, dict):
            MODEL_S[str(action.get("arguments", {}).get("user_id"))] = result.latency_s
        return result

    Simulator.astep = astep  # type: ignore[method-assign]
    plain = net.uvicorn_config
    net.uvicorn_config = lambda app, **kw: plain(_Bench(app), **kw)  # type: ignore[assignment]
    from agentworld.cli import main

    main(["serve", *argv])


# -- processes --------------------------------------------------------------------------------------

def _mock_main(latency_ms: float, queue: Any) -> None:
    from agentworld.serve.mock_server import MockConfig, serve_forever

    serve_forever(MockConfig(latency_ms=latency_ms), announce=queue.put)


def start_mock(latency_ms: float) -> tuple[Any, str]:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_mock_main, args=(latency_ms, queue), daemon=True)
    proc.start()
    return proc, queue.get(timeout=60)


def start_server(surface: str, mock_url: str, sessions: int,
                 tools: Path) -> tuple[subprocess.Popen[str], str]:
    common = ["--model-base-url", mock_url, "--model", "mock", "--port", "0", "--max-sessions",
              str(sessions + 16), "--concurrency", str(sessions + 16)]
    extra = ["--transport", "http", "--tools", str(tools)] if SERVE_COMMAND[surface] == "mcp" else []
    proc = subprocess.Popen([sys.executable, __file__, "--serve", SERVE_COMMAND[surface], *common, *extra],
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(r"listening on (http://[^\s]+?)(/v1|/mcp)\s", line)
    if not match:
        proc.kill()
        raise SystemExit(f"{surface} server did not start: {line!r}")
    url = match.group(1)
    for _ in range(400):
        try:
            if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.05)
    raise SystemExit(f"{surface} server not reachable")


# -- the drivers ------------------------------------------------------------------------------------

class Run:
    def __init__(self) -> None:
        self.server_s: dict[str, float] = {}
        self.model_s: dict[str, float] = {}
        self.errors: list[str] = []


class Answer:
    """An HTTP answer read to the end (what the drivers need of it)."""

    def __init__(self, status: int, headers: Any, body: bytes) -> None:
        self.status_code, self.headers, self.body = status, headers, body

    @property
    def text(self) -> str:
        return self.body.decode(errors="replace")

    def json(self) -> Any:
        return orjson.loads(self.body)


class Client:
    """The agents' client: aiohttp with an ``httpx``-like ``get``/``post`` on a base URL."""

    def __init__(self, base_url: str, connections: int) -> None:
        self.base_url = base_url
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=connections),
                                             timeout=aiohttp.ClientTimeout(total=300))

    async def request(self, method: str, path: str, json: Any = None,
                      headers: dict[str, str] | None = None) -> Answer:
        data = None if json is None else orjson.dumps(json)
        sent = {"Content-Type": "application/json", **(headers or {})}
        async with self.session.request(method, self.base_url + path, data=data, headers=sent) as r:
            return Answer(r.status, r.headers, await r.read())

    async def post(self, path: str, json: Any = None, headers: dict[str, str] | None = None) -> Answer:
        return await self.request("POST", path, json, headers)

    async def get(self, path: str) -> Answer:
        return await self.request("GET", path)

    async def aclose(self) -> None:
        await self.session.close()


def _server_s(response: Answer) -> float:
    return float(response.headers["server-timing"].partition("dur=")[2]) / 1000


async def http_episode(client: Client, i: int, steps: int, think_s: float, delay_s: float,
                       run: Run, opened: asyncio.Event) -> None:
    await asyncio.sleep(delay_s)
    spec = {"domain": "mcp", "name": f"scale-{i}", "tools": TOOLS, "initial_state": "An airline backend."}
    created = await client.post("/v1/sessions", json={"spec": spec, "seed": i})
    if created.status_code != 200:
        run.errors.append(f"create {i}: {created.status_code} {created.text[:200]}")
        return
    sid = created.json()["session_id"]
    await opened.wait()
    await asyncio.sleep(delay_s)  # keep the sessions spread over one think time
    for k in range(steps):
        await asyncio.sleep(think_s)
        action = {"tool_name": "get_user_details", "arguments": {"user_id": f"u{i}x{k}"}}
        r = await client.post(f"/v1/sessions/{sid}/step", json={"action": action})
        if r.status_code != 200:
            run.errors.append(f"step {i}/{k}: {r.status_code} {r.text[:200]}")
            continue
        run.server_s[f"u{i}x{k}"] = _server_s(r)
        run.model_s[f"u{i}x{k}"] = float(r.json()["latency_s"])


async def _rpc(client: Client, url: str, body: dict[str, Any], headers: dict[str, str]) -> Answer:
    return await client.post(url, json=body, headers={**MCP_HEADERS, **headers})


async def mcp_episode(client: Client, i: int, steps: int, think_s: float, delay_s: float,
                      run: Run, opened: asyncio.Event, modern: bool = False) -> None:
    """An MCP client over raw JSON-RPC on its episode's address: the handshake era (initialize,
    initialized, then tools/call in an MCP session), or with ``modern`` the stateless revision (each
    tools/call one self-contained POST)."""
    await asyncio.sleep(delay_s)
    created = await client.post("/v1/episodes", json={"seed": i})
    if created.status_code != 200:
        run.errors.append(f"create {i}: {created.status_code} {created.text[:200]}")
        return
    url = "/mcp/" + created.json()["episode_id"]
    if modern:
        await opened.wait()
        await asyncio.sleep(delay_s)
        for k in range(steps):
            await asyncio.sleep(think_s)
            r = await client.post(url, headers=MODERN_HEADERS, json={
                "jsonrpc": "2.0", "id": k + 1, "method": "tools/call", "params": {
                    "name": "get_user_details", "arguments": {"user_id": f"u{i}x{k}"}, "_meta": MODERN_META}})
            if r.status_code != 200 or "error" in r.json():
                run.errors.append(f"step {i}/{k}: {r.status_code} {r.text[:200]}")
                continue
            run.server_s[f"u{i}x{k}"] = _server_s(r)
        return
    init = await _rpc(client, url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}}, {})
    if init.status_code != 200:
        run.errors.append(f"initialize {i}: {init.status_code} {init.text[:200]}")
        return
    session = {"Mcp-Session-Id": init.headers["mcp-session-id"]} if "mcp-session-id" in init.headers else {}
    await _rpc(client, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    await opened.wait()
    await asyncio.sleep(delay_s)  # keep the sessions spread over one think time
    for k in range(steps):
        await asyncio.sleep(think_s)
        r = await _rpc(client, url, {"jsonrpc": "2.0", "id": k + 1, "method": "tools/call", "params": {
            "name": "get_user_details", "arguments": {"user_id": f"u{i}x{k}"}}}, session)
        if r.status_code != 200 or "error" in r.json():
            run.errors.append(f"step {i}/{k}: {r.status_code} {r.text[:200]}")
            continue
        run.server_s[f"u{i}x{k}"] = _server_s(r)


async def drive(surface: str, url: str, sessions: int, steps: int, think_s: float,
                mock_pid: int) -> dict[str, Any]:
    """Drive every session through one aiohttp pool."""
    run = Run()
    opened = asyncio.Event()
    episode: Any = http_episode if surface == "http" else functools.partial(mcp_episode,
                                                                             modern=surface == "mcp-modern")
    client = Client(url, sessions + 8)
    try:
        before = (await client.get("/_bench?reset=1")).json()
        tasks = [asyncio.create_task(episode(client, i, steps, think_s, think_s * i / sessions, run, opened))
                 for i in range(sessions)]
        await asyncio.sleep(think_s)  # every session has started creating
        while len(run.errors) == 0 and (await client.get("/v1/health")).json().get(
                "sessions" if surface == "http" else "episodes", 0) < sessions:
            await asyncio.sleep(0.2)
        stepping = (await client.get("/_bench?reset=1")).json()  # loop lag while stepping only
        mock_cpu, own_cpu = _cpu_s(mock_pid), time.process_time()
        opened.set()
        started = time.perf_counter()
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - started
        mock_cpu, own_cpu = _cpu_s(mock_pid) - mock_cpu, time.process_time() - own_cpu
        after = (await client.get("/_bench?model=1")).json()
    finally:
        await client.aclose()
    if not run.model_s:  # MCP: the model time the server recorded for each step
        run.model_s = {key: after["model_s"][key] for key in run.server_s if key in after["model_s"]}
    return {"run": run, "before": before, "after": after, "elapsed": elapsed,
            "cpu_s": {"server": after["cpu_s"] - stepping["cpu_s"], "mock": mock_cpu, "driver": own_cpu}}


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def measure(surface: str, sessions: int, args: argparse.Namespace, mock: Any, mock_url: str,
            tools: Path) -> dict[str, Any]:
    server, url = start_server(surface, mock_url, sessions, tools)
    try:
        out = asyncio.run(drive(surface, url, sessions, args.steps, args.think_s or sessions / args.rate,
                                mock.pid))
    finally:
        server.terminate()
        server.wait(timeout=30)
    run: Run = out["run"]
    latency_s = args.latency_ms / 1000
    upper = [s - latency_s for s in run.server_s.values()]
    exact = [s - run.model_s[key] for key, s in run.server_s.items() if key in run.model_s]
    return {"surface": surface, "sessions": sessions, "steps": len(run.server_s),
            "steps_per_s": len(run.server_s) / out["elapsed"], "errors": run.errors,
            "exact_p50": 1000 * pct(exact, 0.5), "exact_p99": 1000 * pct(exact, 0.99),
            "upper_p50": 1000 * pct(upper, 0.5), "upper_p99": 1000 * pct(upper, 0.99),
            "mem_kib": (out["after"]["rss"] - out["before"]["rss"]) / sessions / 1024,
            "rss_mib": out["after"]["rss"] / 2**20,
            "lag_p50": out["after"]["lag_p50_ms"], "lag_p99": out["after"]["lag_p99_ms"],
            "lag_max": out["after"]["lag_max_ms"],
            **{f"cpu_{k}": 1000 * v / max(1, len(run.server_s)) for k, v in out["cpu_s"].items()}}


def show(rows: list[dict[str, Any]]) -> None:
    head = (f"{'surface':>10} {'sessions':>8} {'steps':>6} {'steps/s':>7} {'overhead p50':>12} "
            f"{'p99':>8} {'srv-mock p50':>12} {'p99':>8} {'KiB/session':>11} {'RSS MiB':>8} "
            f"{'lag p50':>8} {'p99':>7} {'max':>7} {'errors':>6}  CPU ms/step server/mock/driver")
    print(head)
    for r in rows:
        print(f"{r['surface']:>10} {r['sessions']:>8} {r['steps']:>6} {r['steps_per_s']:>7.1f} "
              f"{r['exact_p50']:>9.2f} ms {r['exact_p99']:>5.2f} ms {r['upper_p50']:>9.2f} ms "
              f"{r['upper_p99']:>5.2f} ms {r['mem_kib']:>11.1f} {r['rss_mib']:>8.0f} {r['lag_p50']:>5.1f} ms "
              f"{r['lag_p99']:>4.1f} ms {r['lag_max']:>4.0f} ms {len(r['errors']):>6}  "
              f"{r['cpu_server']:.1f} / {r['cpu_mock']:.1f} / {r['cpu_driver']:.1f}")
    for r in rows:
        for e in r["errors"][:3]:
            print(f"  {r['surface']} {r['sessions']}: {e}")
    print("overhead = server time - the step's model call time; "
          "srv-mock = server time - the mock's fixed latency (an upper bound, both surfaces); "
          "lag = lateness of a 50 ms timer on the server's event loop while stepping")


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        serve_wrapped(sys.argv[2:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1000, 4000])
    parser.add_argument("--surfaces", nargs="+", choices=list(SERVE_COMMAND), default=list(SERVE_COMMAND),
                        help="mcp: handshake-era MCP sessions; mcp-modern: stateless MCP (2026-07-28).")
    parser.add_argument("--steps", type=int, default=3, help="Steps per session.")
    parser.add_argument("--latency-ms", type=float, default=500.0, help="The mock model's latency.")
    parser.add_argument("--think-s", type=float, default=0.0,
                        help="Agent think time between steps; 0: sessions / --rate.")
    parser.add_argument("--rate", type=float, default=100.0,
                        help="Steps per second all sessions together ask of the server.")
    parser.add_argument("--target-p99-ms", type=float, default=10.0)
    args = parser.parse_args()
    mock, mock_url = start_mock(args.latency_ms)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tools = Path(tmp) / "tools.json"
            tools.write_text(json.dumps({"tools": TOOLS}))
            for sessions in args.sessions:
                for surface in args.surfaces:
                    rows.append(measure(surface, sessions, args, mock, mock_url, tools))
                    print(f"done: {surface} x {sessions} ({len(rows[-1]['errors'])} errors)", flush=True)
    finally:
        mock.terminate()
    print(f"mock latency {args.latency_ms:g} ms, {args.steps} steps per session, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    show(rows)
    ok = all(not r["errors"] for r in rows)
    at_1000 = [r for r in rows if r["sessions"] == 1000]
    for r in at_1000:
        met = r["exact_p99"] < args.target_p99_ms
        print(f"p99 framework overhead at 1,000 sessions < {args.target_p99_ms:g} ms, {r['surface']}: "
              f"{'met' if met else 'MISSED'}")
        ok = ok and met
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Framework overhead of the HTTP session API: 32 concurrent sessions, histories of 10 to 200 turns.

Why: a simulator step costs one model call; everything else (HTTP, session lookup and lock,
prompt building, ledger, serialisation) is overhead an RL loop pays on every step. It must be
small and must not grow with the episode's length, or long episodes slow down quadratically.

Setup: the mock OpenAI-compatible server runs in its own process with a fixed latency; the
session API (``agentworld serve http``) in another; this process drives ``--sessions``
concurrent sessions of ``--turns`` MCP tool calls each (distinct per session). Overhead of a
step = wall time at the client minus ``StepResult.latency_s`` (the model calls' own time).
The world spec uses the Simulator's ``history_budget_tokens`` as any user would.

Prints median and p90 overhead at history lengths 10, 50, 100, 200 side by side; exits 1 if
any median is over ``--target-ms`` (default 2 ms).

    python benchmarks/bench_sessions.py [--sessions 32] [--turns 203] [--latency-ms 500]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import re
import statistics
import subprocess
import sys
import time
from typing import Any

import httpx

CHECKPOINTS = (10, 50, 100, 200)
WINDOW = 2
"""Steps within this many turns of a checkpoint count toward it (more samples, same history size)."""

TOOLS = [
    {"name": "get_user_details", "description": "Get the details of a user.",
     "inputSchema": {"type": "object", "properties": {"user_id": {"type": "string"}},
                     "required": ["user_id"]}},
    {"name": "get_reservation_details", "description": "Get the details of a reservation.",
     "inputSchema": {"type": "object", "properties": {"reservation_id": {"type": "string"}},
                     "required": ["reservation_id"]}},
]


def _mock_main(latency_ms: float, queue: Any) -> None:
    from agentworld.serve.mock_server import MockConfig, serve_forever

    serve_forever(MockConfig(latency_ms=latency_ms), announce=queue.put)


def start_mock(latency_ms: float) -> tuple[Any, str]:
    """The mock model server in its own process (spawned: no state shared with this one)."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_mock_main, args=(latency_ms, queue), daemon=True)
    proc.start()
    return proc, queue.get(timeout=60)


def start_api(mock_url: str, sessions: int) -> tuple[subprocess.Popen[str], str]:
    """``agentworld serve http`` as a subprocess on a free port; return it and its base URL."""
    cmd = [sys.executable, "-m", "agentworld", "serve", "http", "--model-base-url", mock_url,
           "--model", "mock", "--port", "0", "--max-sessions", str(sessions * 2),
           "--concurrency", str(sessions * 2)]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(r"listening on (http://[^\s]+)/v1", line)
    if not match:
        proc.kill()
        raise SystemExit(f"session API did not start: {line!r}")
    url = match.group(1)
    for _ in range(200):
        try:
            if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.05)
    raise SystemExit("session API not reachable")


Sample = tuple[int, float, float, float]
"""(history length, client wall s, model s, server s) of one step."""
"""(history length before the step, wall seconds at the client, model seconds)."""


async def episode(client: httpx.AsyncClient, index: int, turns: int, budget: int,
                  start_delay_s: float) -> list[Sample]:
    """One session: ``turns`` distinct tool calls; returns one :data:`Sample` per step.

    Sessions start staggered over one model latency: with a fixed mock latency, sessions started
    together stay in lockstep and every answer arrives in one burst, which measures the CPU's
    queue, not the per-step overhead (real agents do not tick in lockstep).
    """
    await asyncio.sleep(start_delay_s)
    spec = {"domain": "mcp", "name": f"bench-{index}", "tools": TOOLS, "history_budget_tokens": budget,
            "initial_state": "An airline booking backend."}
    created = await client.post("/v1/sessions", json={"spec": spec, "seed": index})
    created.raise_for_status()
    sid = created.json()["session_id"]
    samples: list[Sample] = []
    for k in range(turns):
        tool, key = (("get_user_details", "user_id") if k % 2
                     else ("get_reservation_details", "reservation_id"))
        action = {"tool_name": tool, "arguments": {key: f"s{index}-t{k}"}}
        t0 = time.perf_counter()
        response = await client.post(f"/v1/sessions/{sid}/step", json={"action": action})
        wall = time.perf_counter() - t0
        response.raise_for_status()
        result = response.json()
        server_ms = float(response.headers["server-timing"].partition("dur=")[2])
        samples.append((k, wall, float(result["latency_s"]), server_ms / 1000))
    await client.delete(f"/v1/sessions/{sid}")
    return samples


async def drive(url: str, sessions: int, turns: int, budget: int, latency_s: float) -> list[Sample]:
    limits = httpx.Limits(max_connections=sessions + 4, max_keepalive_connections=sessions + 4)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        results = await asyncio.gather(*(episode(client, i, turns, budget, latency_s * i / sessions)
                                         for i in range(sessions)))
    return [s for run in results for s in run]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(samples: list[Sample], turns: int, target_ms: float) -> bool:
    """Print the table; True when every checkpoint's median framework overhead is under the target.

    framework = server time (``Server-Timing``, request received → response start) minus the
    model's time: what agentworld itself adds per step. client = wall time at this client minus
    the model's time: adds this process's HTTP stack and the loopback transfer (shown, not judged).
    """
    groups = [("all", samples)] + [(str(c), [s for s in samples if abs(s[0] - c) <= WINDOW])
                                   for c in CHECKPOINTS if c <= turns]
    print(f"{'history':>8} {'steps':>6} {'framework median':>17} {'framework p90':>14} "
          f"{'client median':>14} {'model median':>13}")
    ok = True
    medians = []
    for name, group in groups:
        framework = [srv - m for _, _, m, srv in group]
        client = [w - m for _, w, m, _ in group]
        median = statistics.median(framework) * 1000
        if name != "all":
            medians.append(median)
            ok = ok and median < target_ms
        print(f"{name:>8} {len(group):>6} {median:>14.3f} ms {pct(framework, 0.9) * 1000:>11.3f} ms "
              f"{statistics.median(client) * 1000:>11.3f} ms "
              f"{statistics.median([m for _, _, m, _ in group]) * 1000:>10.2f} ms")
    print(f"flatness: max-min of checkpoint medians = {max(medians) - min(medians):.3f} ms; "
          f"target framework median < {target_ms} ms: {'met' if ok else 'MISSED'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--turns", type=int, default=max(CHECKPOINTS) + WINDOW + 1)
    parser.add_argument("--latency-ms", type=float, default=500.0,
                        help="Mock model latency (a small LLM world model answers in 0.3-3 s).")
    parser.add_argument("--history-budget-tokens", type=int, default=512,
                        help="WorldSpec.history_budget_tokens: the prompt keeps this much history.")
    parser.add_argument("--target-ms", type=float, default=2.0)
    args = parser.parse_args()
    mock, mock_url = start_mock(args.latency_ms)
    api, url = start_api(mock_url, args.sessions)
    try:
        started = time.perf_counter()
        samples = asyncio.run(drive(url, args.sessions, args.turns, args.history_budget_tokens,
                                    args.latency_ms / 1000))
        elapsed = time.perf_counter() - started
    finally:
        api.terminate()
        api.wait(timeout=10)
        mock.terminate()
    print(f"{args.sessions} sessions x {args.turns} turns = {len(samples)} steps in {elapsed:.1f} s "
          f"(mock latency {args.latency_ms:g} ms, history budget {args.history_budget_tokens} tokens)")
    return 0 if report(samples, args.turns, args.target_ms) else 1


if __name__ == "__main__":
    sys.exit(main())

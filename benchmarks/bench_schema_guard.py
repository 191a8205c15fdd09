"""A hostile tool schema against ``agentworld serve http``: does one step freeze the server?

Why: the HTTP session API takes tool schemas from its clients. ``"pattern": "^(a+)+$"`` checked
with a backtracking regex engine takes time doubling with every character of ``"a" * n + "!"``;
when that runs on the server's event loop, every other session and ``/v1/health`` wait for it.

Setup: the mock model server in-process, ``serve http`` as a subprocess (its own GIL, so this
client keeps polling while the server is busy). For each ``n`` one session is created with the
hostile schema and stepped with ``"a" * n + "!"`` while ``/v1/health`` is polled every 20 ms.
Prints, per ``n``: the step's status and seconds, how many health checks were answered while
the step was in flight, and the slowest health answer.

    python benchmarks/bench_schema_guard.py [--lengths 20 22 24 25 40] [--step-timeout-s 30]

Run it against another checkout with ``PYTHONPATH=/path/to/src`` to compare before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
import time

import httpx

from agentworld.serve.mock_server import MockConfig, run_mock_server

TOOL = {"name": "match", "description": "Matches a string.",
        "inputSchema": {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}}


def start_api(mock_url: str) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-m", "agentworld", "serve", "http", "--model-base-url", mock_url,
           "--model", "mock", "--port", "0"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(r"listening on (http://\S+)/v1", line)
    if not match:
        proc.kill()
        raise SystemExit(f"serve http did not start: {line!r}")
    url = match.group(1)
    for _ in range(400):
        try:
            httpx.get(f"{url}/v1/health", timeout=1)
            return proc, url
        except httpx.TransportError:
            time.sleep(0.05)
    raise SystemExit("serve http not reachable")


async def probe(url: str, n: int, step_timeout_s: float) -> tuple[str, float, int, float]:
    """(step status, step seconds, health checks sent and answered while the step was in flight,
    slowest health answer in s)."""
    async with httpx.AsyncClient(base_url=url, timeout=step_timeout_s) as client, \
            httpx.AsyncClient(base_url=url, timeout=step_timeout_s) as health:
        created = await client.post("/v1/sessions", json={"spec": {"domain": "mcp", "tools": [TOOL]}})
        if created.status_code != 200:
            return f"create {created.status_code}", 0.0, 0, 0.0
        sid = created.json()["session_id"]
        answers: list[tuple[float, float]] = []
        done = asyncio.Event()

        async def poll() -> None:
            while not done.is_set():
                sent = time.perf_counter()
                if (await health.get("/v1/health")).status_code == 200:
                    answers.append((sent, time.perf_counter()))
                await asyncio.sleep(0.02)

        poller = asyncio.create_task(poll())
        await asyncio.sleep(0.1)
        t0 = time.perf_counter()
        try:
            action = {"tool_name": "match", "arguments": {"s": "a" * n + "!"}}
            step = await client.post(f"/v1/sessions/{sid}/step", json={"action": action})
            status = str(step.status_code) + (" is_error" if step.status_code == 200
                                              and step.json().get("is_error") else "")
        except httpx.TimeoutException:
            status = "client timeout"
        t1 = time.perf_counter()
        done.set()
        await poller
        took = t1 - t0
        answered = sum(1 for sent, got in answers if sent >= t0 and got <= t1)
        slowest = max((got - sent for sent, got in answers), default=0.0)
        return status, took, answered, slowest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[20, 22, 24, 25, 40])
    parser.add_argument("--step-timeout-s", type=float, default=30.0)
    args = parser.parse_args()
    with run_mock_server(MockConfig()) as mock_url:
        api, url = start_api(mock_url)
        try:
            print(f"{'n':>4} {'step status':>16} {'step s':>8} {'health answered':>16} "
                  f"{'slowest health s':>17}")
            for n in args.lengths:
                status, took, answered, slowest = asyncio.run(probe(url, n, args.step_timeout_s))
                print(f"{n:>4} {status:>16} {took:>8.3f} {answered:>16} {slowest:>17.3f}")
                if status == "client timeout":
                    print("(the server is still busy; stopping)")
                    break
        finally:
            api.kill()
            api.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())

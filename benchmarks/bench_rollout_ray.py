"""Sim RL rollouts in process vs on Ray actors, against endpoints with a fixed latency per call.

Why: an episode is a chain of model calls (the agent's, the world model's); in process they run one
episode after the other, so wall time is about ``episodes × calls × latency``. On Ray, each actor
holds ``--sessions-per-actor`` simulator sessions at once, so the same episodes overlap. This prints
both wall times side by side (the Ray run includes creating its actors; ``ray.init`` and a warm-up
run that starts Ray's worker processes are timed apart), and checks both runs gave identical episodes.

Setup: one OpenAI-compatible HTTP endpoint on 127.0.0.1 (a threaded stub) answers the agent (two
tool calls, then DONE) and the world model, each reply after ``--latency-ms``; a local Ray instance
with ``--cpus`` CPUs, one actor per CPU.

    python benchmarks/bench_rollout_ray.py [--episodes 32] [--latency-ms 100] [--cpus 2]
        [--sessions-per-actor 8]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CALL = 'Looking.\n{"tool_name": "get_weather", "arguments": {"city": "Oslo"}}'
TOOLS = [{"name": "get_weather", "description": "Weather for a city.",
          "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}}]


@contextlib.contextmanager
def endpoint(latency_s: float) -> Iterator[str]:
    """The agent (``/agent/v1``) and world model (``/world/v1``), each reply after ``latency_s``."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            time.sleep(latency_s)
            if self.path.startswith("/agent/"):
                content = CALL if len(body["messages"]) < 6 else "DONE"
            else:
                content = '<predicted_observation>{"city": "Oslo", "temp_c": 3}</predicted_observation>'
            data = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                               "choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": content}}],
                               "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data.encode())

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--sessions-per-actor", type=int, default=8)
    args = parser.parse_args()

    import ray

    from agentworld.endpoints import Endpoint
    from agentworld.sim.curriculum import Curriculum
    from agentworld.sim.types import WorldSpec
    from agentworld.train.rollout_jobs import curriculum_jobs, run_jobs_local
    from agentworld.train.rollout_ray import run_jobs_ray

    spec = WorldSpec(domain="mcp", tools=TOOLS)
    jobs = curriculum_jobs(spec, Curriculum(), args.episodes, 5, task="weather", agent_model="agent")
    with endpoint(args.latency_ms / 1000) as url:
        agent = Endpoint("agent", f"{url}/agent/v1", None)
        world = Endpoint("world", f"{url}/world/v1", None)
        start = time.perf_counter()
        local = [e.model_dump() for e in run_jobs_local(jobs, agent.build(), world.build())]
        local_s = time.perf_counter() - start

        start = time.perf_counter()
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False,
                 _node_ip_address="127.0.0.1")
        init_s = time.perf_counter() - start
        warm = curriculum_jobs(spec, Curriculum(), args.cpus, 1, task="warm-up", agent_model="agent")
        start = time.perf_counter()
        list(run_jobs_ray(warm, agent, world, actors=args.cpus, sessions_per_actor=1))
        warm_s = time.perf_counter() - start
        start = time.perf_counter()
        remote = [e.model_dump() for e in run_jobs_ray(jobs, agent, world, actors=args.cpus,
                                                        sessions_per_actor=args.sessions_per_actor)]
        ray_s = time.perf_counter() - start
        ray.shutdown()
    calls = sum(len(e["completions"]) + len(e["trajectory"]["turns"]) for e in local)
    print(f"{args.episodes} episodes, {calls} model calls at {args.latency_ms:.0f} ms; "
          f"Ray: {args.cpus} actors x {args.sessions_per_actor} sessions")
    print(f"{'':24}{'wall s':>10}{'episodes/s':>12}")
    print(f"{'in process':24}{local_s:>10.2f}{args.episodes / local_s:>12.2f}")
    print(f"{'on ray':24}{ray_s:>10.2f}{args.episodes / ray_s:>12.2f}")
    print(f"speed-up {local_s / ray_s:.1f}x; not included: ray.init {init_s:.1f} s, a warm-up run that "
          f"starts the worker processes {warm_s:.1f} s; identical episodes: {remote == local}")


if __name__ == "__main__":
    main()

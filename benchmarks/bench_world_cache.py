"""What a ``serve http --worlds-root`` session costs on a large world: parsed per request, or once.

What it measures: a generated world folder with ``--tasks`` tasks (default 100,000, as in issue 22)
and the time to get the spec a new session needs, three ways:

* before: ``load_world(folder).to_spec()`` on every request (what the server did: the whole folder,
  ``tasks.jsonl`` included, parsed each time);
* after, cold: the first request through :class:`agentworld.synth.world_cache.WorldSpecCache`
  (``world.json`` only);
* after, warm: every later request (a ``stat`` of ``world.json`` and a dictionary look-up);

and, end to end, ``POST /v1/sessions {"world": ...}`` on a real server on 127.0.0.1 (the offline
``scripted`` model, so no model time is counted). Prints the per-request time of each and the ratio.

Run (from the repository root; about half a minute with the default size)::

    PYTHONPATH=src:tests python benchmarks/bench_world_cache.py [--tasks 100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentworld.synth.world import load_world
from agentworld.synth.world_cache import WorldSpecCache


def make_world(folder: Path, tasks: int) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from test_synth_world import TASK, WORLD

    folder.mkdir(parents=True)
    (folder / "world.json").write_text(json.dumps(WORLD))
    with (folder / "tasks.jsonl").open("w") as handle:
        for i in range(tasks):
            handle.write(json.dumps({**TASK, "id": f"t{i}"}) + "\n")
    return folder


def per_call(call: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def over_http(root: Path, repeat: int) -> float:
    import httpx
    from test_serve_http import serve

    from agentworld.serve.config import HttpServeConfig
    from agentworld.serve.http_api import create_app

    with serve(create_app(HttpServeConfig(model="scripted", worlds_root=root))) as url, \
            httpx.Client(base_url=url, timeout=120) as client:
        client.post("/v1/sessions", json={"world": "big"}).raise_for_status()  # the cold parse
        return per_call(lambda: client.post("/v1/sessions", json={"world": "big"}).raise_for_status(), repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=100_000, help="tasks in the generated world")
    parser.add_argument("--repeat", type=int, default=5, help="requests timed per way (median shown)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-world-cache-") as tmp:
        root = Path(tmp) / "worlds"
        folder = make_world(root / "big", args.tasks)
        size = (folder / "tasks.jsonl").stat().st_size
        before = per_call(lambda: load_world(folder).to_spec(), args.repeat)
        cache = WorldSpecCache()
        cold = per_call(lambda: WorldSpecCache().spec(folder), args.repeat)
        cache.spec(folder)
        warm = per_call(lambda: cache.spec(folder), max(args.repeat, 100))
        http = over_http(root, args.repeat)
    print(f"world: {args.tasks} tasks ({size / 1e6:.1f} MB tasks.jsonl)")
    print(f"before (whole folder parsed per request): {before * 1e3:10.2f} ms")
    print(f"after, cold (world.json only):            {cold * 1e3:10.2f} ms  ({before / cold:,.0f}x faster)")
    print(f"after, warm (cached):                     {warm * 1e3:10.4f} ms  ({before / warm:,.0f}x faster)")
    print(f"POST /v1/sessions end to end, warm:       {http * 1e3:10.2f} ms  ({before / http:,.0f}x faster "
          f"than the parse alone before)")


if __name__ == "__main__":
    main()

"""What ``agentworld record mcp`` (stdio) adds to a tool call: direct vs through the proxy, side by side.

Why: the proxy writes each answered call to its output before relaying the answer (so a killed
proxy has written everything its client saw; a background thread fsyncs it). That must stay
small next to what a real tool call costs (milliseconds to minutes); it grows with the session,
as row *k* holds turns 1…k (AgentWorldBench rows carry their history).

Setup: a tiny stdio MCP server that answers ``tools/call`` at once with ``--bytes`` of text; this
process sends ``--calls`` calls one after another over raw pipes, first straight to the server,
then through the proxy, and times each round trip. Prints median and p90 per call for both, the
overhead and its ratio, and the recording's size. Exits 1 if the median overhead is over
``--target-ms``.

    python benchmarks/bench_mcp_proxy.py [--calls 200] [--bytes 2000] [--target-ms 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SERVER = """\
import json, sys
size = int(sys.argv[1])
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "bench", "version": "1"}}
    else:
        text = (json.dumps(msg["params"]["arguments"]) + " ") * (size // 10 + 1)
        result = {"content": [{"type": "text", "text": text[:size]}]}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""
MAIN = "import sys; from agentworld.cli import main; sys.exit(main())"
HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


def round_trips(command: list[str], calls: int) -> list[float]:
    """Seconds per ``tools/call`` round trip, in order, over the command's stdin/stdout."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, object]) -> None:
        proc.stdin.write(json.dumps(message).encode() + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO})
    proc.stdout.readline()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    times = []
    for i in range(calls):
        start = time.perf_counter()
        send({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
              "params": {"name": "echo", "arguments": {"i": i}}})
        proc.stdout.readline()
        times.append(time.perf_counter() - start)
    proc.stdin.close()
    proc.wait(timeout=60)
    return times


def summary(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered) * 1e3, ordered[int(len(ordered) * 0.9)] * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--bytes", type=int, default=2000, help="text per answer")
    parser.add_argument("--target-ms", type=float, default=20.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script, out = Path(tmp) / "server.py", Path(tmp) / "rec.jsonl"
        script.write_text(SERVER)
        server = [sys.executable, str(script), str(args.bytes)]
        direct = summary(round_trips(server, args.calls))
        proxied = summary(round_trips([sys.executable, "-c", MAIN, "record", "mcp", "--out", str(out),
                                       "--", *server], args.calls))
        size = out.stat().st_size
    overhead = proxied[0] - direct[0]
    print(f"{args.calls} calls, {args.bytes} B answers   median ms   p90 ms")
    print(f"direct                        {direct[0]:9.2f} {direct[1]:8.2f}")
    print(f"through record mcp            {proxied[0]:9.2f} {proxied[1]:8.2f}")
    print(f"overhead per call (median): {overhead:.2f} ms ({proxied[0] / direct[0]:.1f}x); "
          f"recording {size / 1e6:.1f} MB")
    return 0 if overhead <= args.target_ms else 1


if __name__ == "__main__":
    sys.exit(main())

"""HTTP session API: many isolated episodes behind one server, driven with plain HTTP (httpx here).

    agentworld serve http --model-base-url URL --model NAME --port 8765

POST /v1/sessions {spec, seed} -> {session_id, observation}; POST /v1/sessions/{id}/step {action}
-> StepResult (observation, source, fault, ...); GET /v1/sessions/{id}/state; DELETE /v1/sessions/{id}.
It binds 127.0.0.1; --token (or AGENTWORLD_TOKEN) makes clients send "Authorization: Bearer ...".

Offline, URL is agentworld's mock OpenAI-compatible server (in-process here). With a real world
model use its vLLM / SGLang / llama.cpp URL, e.g. --model-base-url http://localhost:8000/v1.

    python examples/http_client.py
"""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx

from agentworld.serve.mock_server import MockConfig, run_mock_server
from agentworld.sim import ControlSpec

HERE = Path(__file__).parent
tools = json.loads((HERE / "tools" / "airline_tools.json").read_text())["tools"]
controls = ControlSpec.load(HERE / "controls" / "flaky.yaml").model_dump()
spec = {"domain": "mcp", "tools": tools, "controls": controls, "initial_state": "Aurora Air bookings."}

with run_mock_server(MockConfig()) as model_url:
    # `agentworld serve http ...`; port 0 picks a free port, announced on stderr.
    server = subprocess.Popen([sys.executable, "-m", "agentworld", "serve", "http", "--model-base-url",
                               model_url, "--model", "wm", "--port", "0"], stderr=subprocess.PIPE, text=True)
    try:
        line = server.stderr.readline()  # "agentworld: listening on http://127.0.0.1:PORT/v1"
        match = re.search(r"listening on (http://\S+/v1)", line)
        assert match, f"server did not start: {line!r}"
        api = httpx.Client(base_url=match.group(1), timeout=30)
        for _ in range(100):  # wait until it answers
            try:
                api.get("/health")
                break
            except httpx.TransportError:
                time.sleep(0.05)
        created = api.post("/sessions", json={"spec": spec, "seed": 0}).json()
        sid = created["session_id"]
        print("session", sid)
        search = {"origin": "QXR", "destination": "LAX", "date": "2024-05-20"}
        for action in ({"tool_name": "get_user_details", "arguments": {"user_id": "mia_li_3668"}},
                       {"tool_name": "search_direct_flight", "arguments": search},
                       {"tool_name": "no_such_tool", "arguments": {}}):
            r = api.post(f"/sessions/{sid}/step", json={"action": action}).json()
            fault = r["fault"]["kind"] if r["fault"] else None
            print(f"step {r['turn']}: source={r['source']} fault={fault} -> {r['observation'][:80]}")
        state = api.get(f"/sessions/{sid}/state").json()
        print(f"state: turn={state['turn']} faults={[f['kind'] for f in state['faults']]}")
        print("close:", api.delete(f"/sessions/{sid}").json())
    finally:
        server.terminate()
        server.wait(timeout=10)

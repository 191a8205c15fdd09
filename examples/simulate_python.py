"""The Python API: a `Simulator` over an MCP world (faults + fictional facts) and a terminal world.

Runs offline: the world model is agentworld's mock OpenAI-compatible server, started in-process.
It answers every call with the same generic line ("Command completed successfully."); a real
world model writes the tool's JSON and realistic error screens instead.
What to look at: each StepResult says where its observation came from (`source`) and which
framework-enforced fault, if any, was injected (`fault`). Invalid calls never reach the model.

Use a real world model: replace the mock with your vLLM / SGLang / llama.cpp server, e.g.
    model = create_backend("openai", base_url="http://localhost:8000/v1", model="my-world-model")

    python examples/simulate_python.py
"""

import json
from pathlib import Path

from agentworld.models import create_backend
from agentworld.serve.mock_server import MockConfig, run_mock_server
from agentworld.sim import ControlSpec, Simulator, WorldSpec

HERE = Path(__file__).parent
tools = json.loads((HERE / "tools" / "airline_tools.json").read_text())["tools"]
controls = ControlSpec.load(HERE / "controls" / "flaky.yaml")  # faults at fixed rates, fictional facts
spec = WorldSpec(domain="mcp", tools=tools, controls=controls, initial_state="Aurora Air booking system.")

calls = [
    {"tool_name": "get_user_details", "arguments": {"user_id": "mia_li_3668"}},
    {"tool_name": "search_direct_flight", "arguments": {"origin": "QXR", "destination": "LAX",
                                                        "date": "2024-05-20"}},
    {"tool_name": "search_direct_flight", "arguments": {"origin": "QXR", "destination": "JFK",
                                                        "date": "2024-05-21"}},  # rate_limit, schedule [2]
    {"tool_name": "cancel_reservation", "arguments": {"reservation_id": "AU12XY"}},  # permission_denied
    {"tool_name": "get_user_details", "arguments": {"user_id": 42}},  # invalid: checked before the model
    {"tool_name": "get_reservation_details", "arguments": {"reservation_id": "AU12XY"}},
]

print("== MCP world (mock world model) ==")
with run_mock_server(MockConfig()) as url:
    model = create_backend("openai", base_url=url, model="wm")
    with Simulator(model) as sim:
        sim.reset(spec, seed=0)
        for call in calls:
            r = sim.step(call)
            fault = r.fault.kind if r.fault else None
            print(f"turn {r.turn} {call['tool_name']}: source={r.source} fault={fault} "
                  f"is_error={r.is_error}\n    {r.observation.splitlines()[0][:110]}")
        print("faults injected:", [f.kind for f in sim.state().faults])

# The terminal: the offline `retrieval` world model answers from recorded sessions; the state
# ledger checks each answer (cwd, host, files created) and repairs what contradicts it.
print("\n== terminal world (offline retrieval world model) ==")
with Simulator(create_backend("retrieval")) as sim:
    print(sim.reset(WorldSpec(domain="terminal"), seed=0))
    for command in ("pwd\n", "mkdir demo\n", "ls /nope\n"):
        r = sim.step([{"keystrokes": command, "duration": 0.5}])
        print(f"[source={r.source} repaired={r.repaired} contradictions={len(r.contradictions)}]")
        print(r.observation)

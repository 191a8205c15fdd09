"""TRL: a `GRPOTrainer(environment_factory=...)` class whose tools are simulated by a world model.

`make_trl_environment(tools, model=...)` turns each MCP tool into a method with a real signature
(from its inputSchema) and a Google docstring, which is what TRL reads to expose tools to the policy.
Error results (invalid arguments, injected faults) are returned as text, so the policy can recover.
Pass it to TRL (not imported here):

    from trl import GRPOConfig, GRPOTrainer
    from agentworld.serve.adapters import environment_rewards
    Env = make_trl_environment(tools, model=lambda: create_backend(
        "openai", base_url="http://localhost:8000/v1", model="my-world-model"),  # vLLM/SGLang/llama.cpp
        spec=WorldSpec(domain="mcp", controls=ControlSpec.load("examples/controls/flaky.yaml")),
        reward=lambda state: float(...), asynchronous=True)
    trainer = GRPOTrainer(model="Qwen/Qwen3-0.6B", train_dataset=dataset, environment_factory=Env,
                          reward_funcs=[environment_rewards], args=GRPOConfig(...))

Use a factory (`model=lambda: ...`) so that each rollout's instance gets its own client; dataset
columns `seed` and `spec` reach `reset`. Offline, the world model here is the mock server.

    python examples/trl_env.py
"""

import inspect
import json
from pathlib import Path

from agentworld.models import create_backend
from agentworld.serve.adapters import make_trl_environment
from agentworld.serve.mock_server import MockConfig, run_mock_server

tools = json.loads((Path(__file__).parent / "tools" / "airline_tools.json").read_text())["tools"]

with run_mock_server(MockConfig()) as url:
    Env = make_trl_environment(tools, model=lambda: create_backend("openai", base_url=url, model="wm"),
                               reward=lambda state: float(state.turn))  # adds get_reward()
    for name in ("search_direct_flight", "send_certificate"):
        method = getattr(Env, name)
        print(f"def {name}{inspect.signature(method)}:")
        print("    " + method.__doc__.replace("\n", "\n    "))
    with Env() as env:
        env.reset(seed=0)
        print("search_direct_flight ->", env.search_direct_flight(origin="JFK", destination="LAX",
                                                                  date="2024-05-20"))
        # schema-breaking arguments: the error comes back as the tool's text, the model is not asked
        print("send_certificate ->", env.send_certificate(user_id="mia_li_3668", amount="fifty"))
        print("reward:", env.get_reward(), "| sources:", [r.source for r in env.results])

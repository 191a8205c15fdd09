"""Gymnasium: the Simulator as a `gymnasium.Env` (text observations and actions), plus `check_env`.

`SimEnv.reset(seed=...)` -> (observation, info); `step(action)` -> (observation, reward, terminated,
truncated, info) with info["source"] and info["fault"]. Actions are text: for the terminal the
keystroke-list JSON, for MCP the {"tool_name", "arguments"} JSON. `check_env` checks call order,
types and that a seed reproduces the whole trajectory (it also accepts a Simulator or a TRL class).

Offline this uses the `retrieval` world model (answers from recorded terminal sessions). With a
real world model: Simulator(create_backend("openai", base_url="http://localhost:8000/v1",
model="my-world-model")) for a vLLM / SGLang / llama.cpp server. Needs `pip install agentworld[gym]`.

    python examples/gym_env.py
"""

import json

from gymnasium.utils.env_checker import check_env as gymnasium_check_env

from agentworld.models import create_backend
from agentworld.serve.adapters.gym import SimEnv
from agentworld.serve.check import check_env
from agentworld.sim import Simulator, WorldSpec


def keys(command: str) -> str:
    return json.dumps([{"keystrokes": command + "\n", "duration": 0.5}])


def make_env() -> SimEnv:
    def reward(result, simulator) -> float:  # your task's reward; here: no error on screen
        return 0.0 if "No such file" in result.observation else 1.0

    return SimEnv(Simulator(create_backend("retrieval")), WorldSpec(domain="terminal"), max_turns=3,
                  reward_fn=reward)


env = make_env()
obs, info = env.reset(seed=0)
print("reset:", repr(obs), info)
for command in ("pwd", "ls /nope", "whoami", "pwd"):
    obs, reward, terminated, truncated, info = env.step(keys(command))
    print(f"{command!r}: reward={reward} source={info['source']} "
          f"terminated={terminated} truncated={truncated}")
    print("   ", obs.splitlines()[1] if len(obs.splitlines()) > 1 else obs)
    if terminated or truncated:
        print("episode over after", info["turn"], "turns")
        break
env.close()

report = check_env(make_env, [keys("pwd"), keys("ls")], seed=0, other_seed=1)
print("check_env:", "; ".join(report.notes))
gymnasium_check_env(make_env(), skip_render_check=True)
print("gymnasium env_checker: ok")

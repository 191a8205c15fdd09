"""Shared builders for the eval tests: synthetic AgentWorldBench files and scripted model/judge replies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentworld.models.base import ChatRequest
from agentworld.models.scripted import ScriptedBackend

VERDICT = ('Thinking first.\n<final_evaluation>\n```json\n{"strengths": ["ok"], "weaknesses": [], '
           '"scores": {"format": 5, "factuality": 3, "consistency": 4, "realism": 4, "quality": 0}}\n```\n'
           "</final_evaluation>")
MALFORMED = "<final_evaluation>I refuse to give JSON</final_evaluation>"


def bench_rows(trajectories: int, turns: int = 3, domain: str = "terminal",
               prefix: str = "t") -> list[dict[str, Any]]:
    """``trajectories × turns`` rows, one per turn, each with a distinct action and observation."""
    rows = []
    for t in range(trajectories):
        prompts = [f"**Action:**\n```json\n[{{\"keystrokes\": \"echo {prefix}{t}-{j}\\n\"}}]\n```"
                   for j in range(turns)]
        responses = [f"**Environment Observation:**\n{prefix}{t}-{j}\nroot@box:/app#" for j in range(turns)]
        for k in range(1, turns + 1):
            rows.append({"task": f"bench/{domain}", "id": f"{prefix}{t}-{k}", "prompt": prompts,
                         "response": responses, "current_prompt": "",
                         "system_str": f"You simulate {domain}.", "turn_idx": k, "total_turns": turns})
    return rows


def write_bench(folder: Path, rows: list[dict[str, Any]], domain: str = "terminal") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{domain}_test.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def echo_truth(request: ChatRequest) -> str:
    """A world model that predicts the observation echoed by the last action (i.e. the truth)."""
    action = request.messages[-1].content
    token = action.split("echo ")[1].split("\\n")[0]
    observation = f"**Environment Observation:**\n{token}\nroot@box:/app#"
    return f"<think>easy</think><predicted_observation>{observation}</predicted_observation>"


def scripted_model() -> ScriptedBackend:
    return ScriptedBackend(default=echo_truth, name="scripted-model")


def scripted_judge(*replies: str) -> ScriptedBackend:
    return ScriptedBackend(replies, default=VERDICT, name="scripted-judge")

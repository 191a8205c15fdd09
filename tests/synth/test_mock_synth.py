"""The mock server as a synth envs generator (--synth): stage prompts get the offline template's JSON."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.domains.mcp.ledger import is_mutating
from agentworld.serve.mock_server import MockConfig, run_mock_server
from agentworld.synth.stages import StageRejection, parse, prompt
from agentworld.synth.world import load_world

TAU = Path(__file__).parents[3] / "shared" / "data" / "tau_bench_airline_gpt4o_dev.json"
SEED = {"id": "s1", "source": "x", "context": "# Airline\nBook flights.",
        "calls": [{"tool": "get_user", "arguments": {"user_id": "u1"}, "observation": '{"user_id": "u1"}'}]}


def _ask(url: str, content: str) -> str:
    body = {"model": "gen", "messages": [{"role": "system", "content": "You design environments."},
                                         {"role": "user", "content": content}]}
    reply = httpx.post(f"{url}/chat/completions", json=body, timeout=30).json()
    return str(reply["choices"][0]["message"]["content"])


def test_stage_prompts_get_parseable_stage_outputs_only_with_synth() -> None:
    stage_prompt = prompt("scenario", {"seed": SEED})
    with run_mock_server(MockConfig(synth=True)) as url:
        scenario = parse("scenario", _ask(url, stage_prompt))
        other = _ask(url, "**Action:**\nls")
        stats = httpx.get(url.removesuffix("/v1") + "/_mock/stats").json()
    assert not isinstance(scenario, StageRejection)
    assert scenario.model_dump()["service"] == "Airline"
    assert "Command completed successfully." in other
    assert (stats["synth"], stats["world"]) == (1, 1)
    with run_mock_server(MockConfig()) as url:
        refused = parse("scenario", _ask(url, stage_prompt))
    assert isinstance(refused, StageRejection) and refused.reason == "unparsable_json"


@pytest.mark.skipif(not TAU.exists(), reason="shared/data (tau-bench logs) is not beside the repo")
def test_synth_envs_against_the_mock_generator(tmp_path: Path) -> None:
    out = tmp_path / "envs"
    with run_mock_server(MockConfig(synth=True, latency_ms=5)) as url:
        result = CliRunner().invoke(app, ["synth", "envs", "--seed-files", str(TAU), "--out", str(out),
                                          "--generator-model", "gen", "--generator-base-url", url,
                                          "--limit", "3", "--concurrency", "4", "--no-progress"],
                                    env={"AGENTWORLD_GENERATOR_API_KEY": "k"})
        stats = httpx.get(url.removesuffix("/v1") + "/_mock/stats").json()
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["environments"] == 3 and summary["requests_sent"] == stats["synth"] == stats["requests"]
    assert stats["requests"] == 3 * 5  # five stages per environment
    assert all((out / f"env_{i:05d}" / "world.json").is_file() for i in range(3))
    world = load_world(out / "env_00000")  # with the standard perturbation specs, ready to sweep
    assert sorted(world.controls) == ["intermittent", "pagination", "partial", "stale"]
    reads = [t.name for t in world.tools if not is_mutating(t.name)]
    assert reads and world.controls["pagination"].faults[0].tools == reads

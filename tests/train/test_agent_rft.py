"""The agent loop of rejection-sampling fine-tuning: a scripted agent on a real MCP server, in the simulator
of that server, and in a synthesized world; what is kept for the update; the update itself."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentworld.domains.mcp.servers import preset
from agentworld.domains.mcp.task_env import RealTaskEnv
from agentworld.domains.mcp.task_suite import TASKS
from agentworld.models.base import create_backend
from agentworld.models.scripted import ScriptedBackend
from agentworld.synth.task_env import WorldTaskEnv
from agentworld.synth.world import load_world
from agentworld.train.agent_rft import (
    DONE,
    call_schema,
    relevant_tools,
    run_episode,
    sft_examples,
    tools_brief,
)
from agentworld.train.sim_task_env import SimTaskEnv

TASK = next(t for t in TASKS if t.template == "fs_first_line")
TAU = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "tau_bench_airline_gpt4o_dev.json"
TAU = TAU if TAU.exists() else Path("/work/shared/data/tau_bench_airline_gpt4o_dev.json")


def replaying(plan: list[dict[str, object]]) -> ScriptedBackend:
    """An agent that makes the plan's calls, one a turn, then says DONE."""
    return ScriptedBackend([json.dumps({"name": s["tool"], "arguments": s["arguments"]}) for s in plan],
                           default=DONE)


def test_tools_brief_lists_arguments_and_marks_optional_ones() -> None:
    tools = [{"name": "write_file", "description": "Write a file.\n  Overwrites.",
              "inputSchema": {"type": "object", "properties": {"path": {"type": "string"},
                                                               "mode": {"type": "string"}},
                              "required": ["path"]}}]
    assert tools_brief(tools) == "- write_file(path: string, mode?: string) — Write a file. Overwrites."


def test_a_scripted_agent_solves_a_real_task_and_a_silent_one_fails_it() -> None:
    if why := preset(TASK.server).missing():
        pytest.skip(why)
    plan = [dict(s) for s in TASK.reference_plan]
    env = RealTaskEnv(TASK, [])
    episode = asyncio.run(run_episode(replaying(plan), env, task=TASK.id))
    assert episode.passed, episode.reasons
    assert [c["tool"] for c in episode.calls] == [s["tool"] for s in plan] and env.real_calls == len(plan)
    assert episode.messages[-1].content == DONE and episode.env_s > 0
    silent = RealTaskEnv(TASK, [])
    talker = ScriptedBackend(default="I would write the file.")
    failed = asyncio.run(run_episode(talker, silent, task=TASK.id))
    assert not failed.passed and failed.calls == [] and silent.real_calls == 0
    kept = sft_examples([episode, failed, episode])
    assert len(kept) == 1 and kept[0][-1].content == DONE, "failed and repeated episodes are not kept"


def test_in_the_simulator_no_server_runs_and_the_trace_is_the_check() -> None:
    plan = [dict(s) for s in TASK.reference_plan]
    model = ScriptedBackend(default="Successfully wrote to /workspace/out.txt")
    env = SimTaskEnv(TASK, [], model)
    episode = asyncio.run(run_episode(replaying(plan), env, task=TASK.id))
    assert episode.passed and len(model.calls) == len(plan)
    wrong = asyncio.run(run_episode(replaying(plan[:1]), SimTaskEnv(TASK, [], model), task=TASK.id))
    assert not wrong.passed and wrong.reasons


@pytest.mark.skipif(not TAU.exists(), reason="tau-bench seed file not present")
def test_a_synthesized_world_task_is_judged_on_its_final_state(tmp_path: Path) -> None:
    out = tmp_path / "envs"
    subprocess.run([sys.executable, "-m", "agentworld", "synth", "envs", "--seed-files", str(TAU),
                    "--limit", "1", "--per-seed", "2", "--out", str(out), "--generator-model",
                    "synth-template", "--no-progress"],
                   check=True, capture_output=True, timeout=300)
    world = load_world(out / "env_00000")
    task = world.tasks[0]
    plan = [s.model_dump() for s in task.reference_plan]
    model = create_backend("world-state")
    done = asyncio.run(run_episode(replaying(plan), WorldTaskEnv(world, task, model), task=task.id))
    assert done.passed, done.reasons
    reads_only = [s for s in plan if s["tool"].startswith(("get", "list", "search", "find"))]
    undone = asyncio.run(run_episode(replaying(reads_only), WorldTaskEnv(world, task, model), task=task.id))
    assert not undone.passed and undone.reasons


@pytest.mark.extra("train")
def test_the_update_writes_a_gguf_the_agent_samples_from(tmp_path: Path) -> None:
    from agentworld.models.base import ChatRequest
    from agentworld.schema import Message
    from agentworld.train.agent_rft import UpdateSettings, supervised_update

    example = [Message(role="system", content="Use tools."), Message(role="user", content="Say hi."),
               Message(role="assistant", content='{"name": "say", "arguments": {"text": "hi"}}'),
               Message(role="assistant", content=DONE)]
    path, stats = supervised_update("smollm2", [example], tmp_path / "agent.gguf", UpdateSettings(steps=2))
    assert stats["steps"] == 2 and stats["loss_first"] > 0 and path.stat().st_size > 50_000_000
    agent = create_backend("llamacpp", path=str(path))
    reply = asyncio.run(agent.complete(ChatRequest(messages=tuple(example[:2]), max_tokens=8)))
    tools = [{"name": "say", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                                             "required": ["text"]}}]
    constrained = asyncio.run(agent.complete(ChatRequest(messages=tuple(example[:2]), max_tokens=128,
                                                         extra={"json_schema": call_schema(tools)})))
    asyncio.run(agent.aclose())
    assert reply.content.strip()
    parsed = json.loads(constrained.content)
    assert parsed == {"done": True} or (parsed["name"] == "say" and "text" in parsed["arguments"]), parsed


def test_relevant_tools_keeps_the_tools_an_instruction_names() -> None:
    tools = [{"name": n, "description": d} for n, d in (
        ("read_text_file", "Read a text file."), ("write_file", "Create a new file or overwrite a file with "
                                                               "new content."),
        ("move_file", "Move or rename a file."), ("list_directory", "List a directory."),
        ("get_file_info", "Show a file's size and times."))]
    ask = "Create the file /workspace/a.txt with this content"
    chosen = [t["name"] for t in relevant_tools(tools, ask, 2)]
    assert "write_file" in chosen and len(chosen) == 2
    assert relevant_tools(tools, "anything", 0) == tools


def test_call_schema_allows_only_the_tools_shown_or_done() -> None:
    import jsonschema

    tools = [{"name": "write_file", "inputSchema": {"type": "object", "properties": {
        "path": {"type": "string", "description": "where"}}, "required": ["path"],
        "additionalProperties": False, "$schema": "http://json-schema.org/draft-07/schema#"}}]
    schema = call_schema(tools)
    jsonschema.validate({"name": "write_file", "arguments": {"path": "/workspace/a"}}, schema)
    jsonschema.validate(json.loads(DONE), schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert not validator.is_valid({"name": "rm_rf", "arguments": {"path": "/"}})
    assert not validator.is_valid({"name": "write_file", "arguments": {}}), "required arguments stay required"
    assert "$schema" not in json.dumps(schema) and "description" not in json.dumps(schema)

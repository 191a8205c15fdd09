"""verl: the MCP tool config route (`train verl-config`) and the agent loop, against the mock world model.

verl cannot be installed into the project's environment (it pins transformers<5.11, hydra needs antlr4
4.9, its MCP client mcp<2), so ``bash install.sh --train`` runs ``tests/verl_deps/install.sh``, which puts
it beside the venv in ``.verl-deps/`` (``--no-deps --target``), and the tests against verl's own code run
it in a child process (``tests/verl_child.py``) with those folders first on PYTHONPATH:

- ``.verl-deps/agentloop``: verl 0.9.1, for ``AgentLoopOutput``, ``register`` and the agent loop;
- ``.verl-deps/mcp``: verl 0.7.1, the last PyPI release with the MCP tool, for
  ``initialize_tools_from_config`` and ``MCPBaseTool``. No verl release on PyPI ships the
  ``verl/tools/utils/mcp_clients`` package that ``MCPBaseTool`` imports (0.4.1-0.7.1 wheels and sdists
  lack it: no ``__init__.py``; 0.4.0 and 0.8.0-0.9.1 have no MCP tool), so its two files, unmodified
  from verl's v0.7.0 tag, come from ``tests/verl_deps/mcp_clients``.

``VERL_PYTHONPATH`` / ``VERL_MCP_PYTHONPATH`` override those folders (e.g. a verl source checkout). Without
either, the verl-class tests skip; the source-contract tests below run regardless and check the files
and outputs against verl's contract (the keys its loader reads, the fields of ``AgentLoopOutput``).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from agentworld.cli import app as root_app
from agentworld.endpoints import build_backend
from agentworld.errors import DataError
from agentworld.serve.mock_server import MockConfig, run_mock_server
from agentworld.sim.types import ControlSpec, FaultRule
from agentworld.train.verl_episode import TokenAgent, run_verl_episode
from serving import wait_listening
from verl_child import TOOLS, airline_spec, scripted_policy

ROOT = Path(__file__).resolve().parents[2]
VERL_DEPS = ROOT / ".verl-deps"
"""Where ``tests/verl_deps/install.sh`` (run by ``install.sh --train``) puts verl."""
MOCK_ANSWER = "Command completed successfully."

VERL_MCP_LOADER_KEYS = ("tools", "class_name", "config.type", "config.rate_limit",
                        "mcp.mcp_servers_config_path", "mcp.tool_selected_list")
"""What ``verl.tools.utils.tool_registry.initialize_tools_from_config`` reads from an MCP entry."""
AGENT_LOOP_OUTPUT_FIELDS = {"prompt_ids", "response_ids", "response_mask", "response_logprobs",
                            "reward_score", "num_turns", "metrics", "extra_fields"}
"""The ``AgentLoopOutput`` fields the loop sets (verl 0.9.1, verl/experimental/agent_loop/agent_loop.py)."""


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with run_mock_server(MockConfig()) as url:
        yield url


def verl_pythonpath(variable: str, *folders: str) -> str:
    """Where a child process finds verl: ``$variable``, else install.sh's ``.verl-deps`` folders."""
    if os.environ.get(variable):
        return os.environ[variable]
    paths = [VERL_DEPS / folder for folder in folders]
    if not all(path.is_dir() for path in paths):
        pytest.skip(f"needs the train extra: bash install.sh --train (it puts verl beside the venv in "
                    f"{paths[0]}; or bash tests/verl_deps/install.sh, or set {variable})")
    return os.pathsep.join(str(path) for path in paths)


def run_verl_child(pythonpath: str, *args: str) -> dict[str, Any]:
    """``tests/verl_child.py ARGS`` with verl first on PYTHONPATH; its JSON report."""
    path = [pythonpath, str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    done = subprocess.run([sys.executable, str(Path(__file__).parents[1] / "verl_child.py"), *args],
                          capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def verl_config(tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / "verl"
    result = CliRunner().invoke(root_app, ["train", "verl-config", "--tools", str(TOOLS), "--model", "mock",
                                           "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    return {"tool_config": yaml.safe_load((out / "mcp_tool_config.yaml").read_text()),
            "server": json.loads((out / "mcp_server.json").read_text()),
            "loop": yaml.safe_load((out / "agent_loop.yaml").read_text()), "out": out}


def tool_names() -> list[str]:
    return [t["name"] for t in json.loads(TOOLS.read_text())["tools"]]


def lookup(entry: dict[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        entry = entry[part]
    return entry


def test_tool_config_has_what_verls_loader_reads(tmp_path: Path, mock_url: str) -> None:
    files = verl_config(tmp_path, "--model-base-url", mock_url)
    (entry,) = files["tool_config"]["tools"]
    for key in VERL_MCP_LOADER_KEYS[1:]:
        lookup(entry, key)
    assert entry["class_name"] == "verl.tools.mcp_base_tool.MCPBaseTool"
    assert entry["config"]["type"] == "mcp"
    assert entry["mcp"]["tool_selected_list"] == tool_names()
    assert Path(entry["mcp"]["mcp_servers_config_path"]) == (files["out"] / "mcp_server.json").resolve()
    server = files["server"]["mcpServers"]["agentworld"]
    assert server["command"] == str(Path(sys.executable).absolute().parent / "agentworld")  # not on PATH
    assert server["args"][:4] == ["serve", "mcp", "--tools", str(TOOLS.resolve())]
    assert server["args"][server["args"].index("--model-base-url") + 1] == mock_url
    (loop,) = files["loop"]
    assert loop == {"name": "agentworld", "_target_": "agentworld.train.verl_loop.AgentWorldAgentLoop",
                    "model": "mock", "model_base_url": mock_url, "max_turns": 10}


def test_stdio_server_entry_serves_the_tools(tmp_path: Path, mock_url: str) -> None:
    """The command verl would start answers tools/list and a call (the shared venv's MCP client)."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    files = verl_config(tmp_path, "--model-base-url", mock_url)  # the default command, as written
    server = files["server"]["mcpServers"]["agentworld"]
    env = {**os.environ, "PATH": "/usr/bin:/bin"}  # verl's workers rarely have the venv on PATH
    params = StdioServerParameters(command=server["command"], args=server["args"], env=env)

    async def run() -> tuple[list[str], str]:
        with (tmp_path / "server.log").open("w") as log:
            async with stdio_client(params, errlog=log) as (read, write), \
                    ClientSession(read, write) as client:
                await client.initialize()
                listed = await client.list_tools()
                result = await client.call_tool("get_user_details", {"user_id": "sara_doe_496"})
                return [t.name for t in listed.tools], result.content[0].text  # type: ignore[union-attr]

    names, text = asyncio.run(run())
    assert names == tool_names()
    assert MOCK_ANSWER in text


def test_serve_url_and_bad_options(tmp_path: Path) -> None:
    files = verl_config(tmp_path, "--serve-url", "http://127.0.0.1:8766/mcp")
    assert files["server"] == {"mcpServers": {"agentworld": {"url": "http://127.0.0.1:8766/mcp"}}}
    runner = CliRunner()
    result = runner.invoke(root_app, ["train", "verl-config", "--model", "mock",
                                      "--out", str(tmp_path / "x")])
    assert result.exit_code == 2
    assert "give exactly one of --tools FILE and --world DIR" in result.output
    key = "sk-verl-secret-123"
    result = runner.invoke(root_app, ["train", "verl-config", "--tools", str(TOOLS), "--model", "m",
                                      "--model-base-url", "http://127.0.0.1:1/v1",
                                      "--out", str(tmp_path / "k")],
                           env={"AGENTWORLD_MODEL_API_KEY": key})
    assert result.exit_code == 0, result.output
    assert all(key not in p.read_text() for p in (tmp_path / "k").iterdir())


def test_verls_own_loader_reads_the_config(tmp_path: Path, mock_url: str) -> None:
    """verl's initialize_tools_from_config lists the tools of a running serve mcp and calls one."""
    pythonpath = verl_pythonpath("VERL_MCP_PYTHONPATH", "mcp", "agentloop")
    args = [sys.executable, "-m", "agentworld", "serve", "mcp", "--tools", str(TOOLS), "--model", "mock",
            "--model-base-url", mock_url, "--transport", "http", "--port", "0"]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        url = wait_listening(proc, r"listening on (http://127\.0\.0\.1:\d+/mcp)", "/v1/health")
        files = verl_config(tmp_path, "--serve-url", url)
        report = run_verl_child(pythonpath, "mcp-loader", str(files["out"] / "mcp_tool_config.yaml"))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert report["names"] == tool_names()
    assert report["classes"] == ["MCPBaseTool"]
    assert report["schema"] == tool_names()[0]
    assert MOCK_ANSWER in report["text"]


# -- the agent loop ---------------------------------------------------------------------------------

def check_tokens(tokenizer: Any, prompt_ids: list[int], response_ids: list[int], mask: list[int],
                 generated: list[list[int]]) -> None:
    """Mask length = response length; the 1-runs are exactly the generated tokens; 0-runs are observations."""
    assert len(mask) == len(response_ids) > 0
    runs: list[tuple[int, list[int]]] = []
    for token, bit in zip(response_ids, mask, strict=True):
        if runs and runs[-1][0] == bit:
            runs[-1][1].append(token)
        else:
            runs.append((bit, [token]))
    assert [ids for bit, ids in runs if bit == 1] == generated
    observations = [tokenizer.decode(ids) for bit, ids in runs if bit == 0]
    # the newline closing the policy's turn after its <|im_end|>, then the observation's user turn
    assert observations and all(text.startswith("\n<|im_start|>user\n") for text in observations)
    full = tokenizer.decode(prompt_ids + response_ids)
    assert "<|im_end|><|im_start|>" not in full
    assert all(text.endswith("<|im_start|>assistant\n") for text in observations)
    assert "Task: Find Sara." in tokenizer.decode(prompt_ids)
    assert tokenizer.decode(prompt_ids).endswith("<|im_start|>assistant\n")


def test_episode_tokens_mask_reward_and_extras(mock_url: str, tiny_chat_tokenizer: Any) -> None:
    generate, generated = scripted_policy(tiny_chat_tokenizer)
    faults = ControlSpec(faults=[FaultRule(kind="timeout", rate=1.0, tools=["get_reservation_details"])])
    episode = asyncio.run(run_verl_episode(
        generate, tiny_chat_tokenizer, build_backend("mock", mock_url), airline_spec(faults),
        task="Find Sara.", seed=3, max_turns=5, response_length=4096, sampling_params={"temperature": 1.0}))
    check_tokens(tiny_chat_tokenizer, episode.prompt_ids, episode.response_ids, episode.response_mask,
                 generated)
    assert len(generated) == 3  # two tool calls, then DONE
    text = tiny_chat_tokenizer.decode([t for t, m in zip(episode.response_ids, episode.response_mask,
                                                         strict=True) if m == 0])
    assert MOCK_ANSWER in text
    assert episode.response_logprobs is not None
    assert [p for p, m in zip(episode.response_logprobs, episode.response_mask, strict=True) if m] == \
        [-0.5] * sum(episode.response_mask)
    assert episode.num_turns == 3 + 2 + 1
    assert episode.reward_score == 0.0
    extra = episode.extra_fields
    assert extra["sources"] == ["world_model", "template"]  # the injected timeout's text
    assert extra["faults"] == [None, "timeout"]
    assert extra["done"] is True and extra["truncated"] is False
    assert isinstance(extra["ledger"], str)
    assert len(extra["trajectory"]["turns"]) == 2


def test_token_budget_truncates_the_episode(mock_url: str, tiny_chat_tokenizer: Any) -> None:
    generate, _generated = scripted_policy(tiny_chat_tokenizer)
    episode = asyncio.run(run_verl_episode(
        generate, tiny_chat_tokenizer, build_backend("mock", mock_url), airline_spec(), task="Find Sara.",
        seed=0, max_turns=5, response_length=60, sampling_params={"temperature": 1.0}))
    assert len(episode.response_ids) == len(episode.response_mask) <= 60
    assert episode.extra_fields["truncated"] is True
    assert episode.extra_fields["done"] is False


def test_observation_ids_refuse_a_template_that_rewrites_history(tiny_chat_tokenizer: Any) -> None:
    class Rewriting:
        def apply_chat_template(self, messages: list[dict[str, Any]], **_: Any) -> str:
            return f"{len(messages)}:" + "|".join(m["content"] for m in messages)

    agent = TokenAgent(scripted_policy(tiny_chat_tokenizer)[0], Rewriting(), {}, response_length=10)
    with pytest.raises(ValueError, match="renders a conversation differently"):
        agent.observation_ids([{"role": "user", "content": "obs"}])


# -- against verl's own classes (in a child process, see the module docstring) ---------------------

@pytest.fixture(scope="module")
def verl_loop_report(mock_url: str, tiny_chat_tokenizer: Any) -> dict[str, Any]:
    """verl 0.9.1's agent-loop classes and one episode of the registered loop, as the child reports them."""
    pythonpath = verl_pythonpath("VERL_PYTHONPATH", "agentloop")
    return run_verl_child(pythonpath, "agent-loop", mock_url, tiny_chat_tokenizer.name_or_path)


def test_output_fields_match_verls_agent_loop_output(verl_loop_report: dict[str, Any]) -> None:
    assert set(verl_loop_report["fields"]) >= AGENT_LOOP_OUTPUT_FIELDS
    assert {"response_mask", "response_ids", "prompt_ids"} <= set(verl_loop_report["required"])


def test_agent_loop_is_registered_and_returns_verls_output(verl_loop_report: dict[str, Any],
                                                           tiny_chat_tokenizer: Any) -> None:
    report = verl_loop_report
    assert report["registry"] == {"_target_": "agentworld.train.verl_loop.AgentWorldAgentLoop"}
    assert report["output_class"] == "verl.experimental.agent_loop.agent_loop.AgentLoopOutput"
    assert report["is_agent_loop_output"] is True
    output = report["output"]
    check_tokens(tiny_chat_tokenizer, output["prompt_ids"], output["response_ids"], output["response_mask"],
                 report["generated"])
    assert len(report["generated"]) == 3
    assert [p for p, m in zip(output["response_logprobs"], output["response_mask"], strict=True) if m] == \
        [-0.5] * sum(output["response_mask"])
    assert output["num_turns"] == 6
    assert output["reward_score"] == 0.0
    assert output["extra_fields"]["sources"] == ["world_model", "world_model"]
    assert output["extra_fields"]["trajectory"]["task"] == "Find Sara."
    assert output["extra_fields"]["done"] is True
    # verl's own tensors: one mask entry per response token
    assert report["shapes"]["response_mask"] == report["shapes"]["responses"]
    assert report["shapes"]["responses"][-1] == len(output["response_ids"])


def test_world_dataset_row_runs_its_task_with_the_success_check(tmp_path: Path,
                                                                tiny_chat_tokenizer: Any) -> None:
    """--world writes one row per task; the row's task, check and seed drive the episode and its reward."""
    from test_rollout_sweep import CALL, RESULT, _world_dir

    from agentworld.models.scripted import ScriptedBackend
    from agentworld.train.verl_episode import row_world

    world = _world_dir(tmp_path / "w", controls={})
    out = tmp_path / "verl"
    result = CliRunner().invoke(root_app, ["train", "verl-config", "--world", str(world), "--model", "mock",
                                           "--out", str(out), "--seed", "7"])
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in (out / "dataset.jsonl").read_text().splitlines()]
    assert row["agent_name"] == "agentworld"
    assert row["prompt"] == [{"role": "user", "content": "Cancel booking B1."}]
    spec, task, seed, check, task_id = row_world(row)
    assert (task, seed, task_id) == ("Cancel booking B1.", 7, "t1")
    assert [t["name"] for t in spec.tools] == ["cancel_booking"]
    assert check is not None

    async def generate(ids: list[int], params: dict[str, Any]) -> tuple[list[int], list[float] | None]:
        said = tiny_chat_tokenizer.decode(ids)
        reply = "DONE" if '"cancelled"' in said.rsplit("<|im_start|>user", 1)[-1] else CALL
        return tiny_chat_tokenizer.encode(reply, add_special_tokens=False), None

    world_model = ScriptedBackend(default=RESULT)
    episode = asyncio.run(run_verl_episode(generate, tiny_chat_tokenizer, world_model, spec, task=task,
                                           seed=seed, max_turns=4, response_length=4096, check=check))
    assert episode.reward_score == 1.0
    assert episode.extra_fields["success"] is True
    assert episode.extra_fields["failed_conditions"] == []
    assert episode.response_logprobs is None  # the policy gave none
    # no end-of-turn token generated: the template's closing of the turn is added, masked
    first_observation = [t for t, m in zip(episode.response_ids, episode.response_mask, strict=True)
                         if m == 0][:3]
    assert tiny_chat_tokenizer.decode(first_observation).startswith("<|im_end|>\n")
    bad = {**row, "agentworld": json.dumps({"world": str(world), "task_id": "nope"})}
    with pytest.raises(DataError, match="no task 'nope' in the world"):
        row_world(bad)
    with pytest.raises(DataError, match="has no 'agentworld' field"):
        row_world({"prompt": []})

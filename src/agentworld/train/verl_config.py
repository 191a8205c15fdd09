"""``agentworld train verl-config``: the files verl reads to train an agent in the simulator.

verl takes environments two ways, and this writes both into ``--out``:

* ``mcp_tool_config.yaml`` + ``mcp_server.json``: verl's MCP tool route
  (``actor_rollout_ref.rollout.multi_turn.tool_config_path``). verl's loader
  (``verl.tools.utils.tool_registry.initialize_tools_from_config``) reads the YAML, its MCP client
  manager reads the ``mcpServers`` file and lists the tools of ``agentworld serve mcp`` — started by
  verl over stdio, or already running over HTTP (``--serve-url``). verl releases from 0.8 on dropped
  this route (and the 0.7 wheels miss its client package): it needs verl installed from a source
  checkout that still has ``verl/tools/mcp_base_tool.py``.
* ``agent_loop.yaml`` (+ ``dataset.jsonl`` with ``--world``): the agent loop route
  (``actor_rollout_ref.rollout.agent.agent_loop_config_path``), :mod:`agentworld.train.verl_loop`,
  one simulator episode per row, which works on current verl.

No API key is written: the stdio server and the agent loop read the world model's key from the
environment (``AGENTWORLD_MODEL_API_KEY``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, model_validator

from agentworld.endpoints import ModelEndpoint
from agentworld.errors import DataError
from agentworld.io import atomic_write_jsonl, atomic_write_text

MCP_TOOL_CLASS = "verl.tools.mcp_base_tool.MCPBaseTool"
AGENT_LOOP_CLASS = "agentworld.train.verl_loop.AgentWorldAgentLoop"
SERVER_NAME = "agentworld"
MCP = "mcp"
"""The protocol: verl's tool type and config section, and the ``serve`` command (not the domain)."""


class VerlConfigOptions(ModelEndpoint):
    """Write verl's MCP tool config and MCP server file (pointing at agentworld serve mcp) and the agent
    loop config for the simulator into OUT."""

    tools: Path | None = Field(None, description='MCP tools/list JSON (a list, or {"tools": [...]}); or give '
                               "--world.")
    world: Path | None = Field(None, description="World folder (world.json, tasks.jsonl): its tools, initial "
                               "state and tasks; also writes dataset.jsonl, one row per task for the agent "
                               "loop.")
    out: Path = Field(description="Folder to write the config files into (created if missing).",
                      json_schema_extra={"output": "folder"})
    serve_url: str | None = Field(None, description="MCP URL of a running agentworld serve mcp --transport "
                                  "http (for example http://127.0.0.1:8766/mcp); default: verl starts the "
                                  "server itself over stdio.")
    command: str | None = Field(None, description="The agentworld executable on the training machines "
                                "(stdio route; default: the absolute path of the running one, so verl "
                                "needs no venv on PATH).")
    rate_limit: float = Field(10.0, gt=0, description="Tool calls per second verl's MCP client may send.")
    timeout_s: float = Field(30.0, gt=0, description="Seconds verl waits for one tool call.")
    max_turns: int = Field(10, ge=1, description="Most agent turns per episode (agent loop).")
    seed: int = Field(0, description="Seed of the simulated episodes (dataset row i uses seed + i).")

    @model_validator(mode="after")
    def _one_world(self) -> VerlConfigOptions:
        if (self.tools is None) == (self.world is None):
            raise ValueError("give exactly one of --tools FILE and --world DIR")
        if self.serve_url is not None and not self.serve_url.startswith(("http://", "https://")):
            raise ValueError("--serve-url must be an http(s) URL")
        return self


def _server_entry(options: VerlConfigOptions) -> dict[str, Any]:
    if options.serve_url is not None:
        return {"url": options.serve_url}
    source = ["--world", str(options.world.resolve())] if options.world is not None else [
        "--tools", str(options.tools.resolve()) if options.tools is not None else ""]
    args = ["serve", MCP, *source, "--model", options.model, "--seed", str(options.seed)]
    if options.model_base_url:
        args += ["--model-base-url", options.model_base_url]
    if options.command is not None:
        return {"command": options.command, "args": args}
    command, prefix = running_executable()
    return {"command": command, "args": [*prefix, *args]}


def running_executable() -> tuple[str, list[str]]:
    """``(absolute command, leading args)`` that start this same agentworld.

    Why: verl starts the MCP server from its own worker processes, whose PATH rarely holds this venv,
    so a bare ``agentworld`` fails there. The console script beside the interpreter is preferred (what
    a user would type); without one (run as ``python -m agentworld``), the interpreter with ``-m``.
    ``sys.executable`` is not resolved: a venv's python is a symlink, and resolving it leaves the venv.
    """
    python = Path(sys.executable).absolute()
    script = python.parent / "agentworld"
    if script.is_file() and os.access(script, os.X_OK):
        return str(script), []
    return str(python), ["-m", "agentworld"]


def _tool_names(options: VerlConfigOptions) -> list[str]:
    from agentworld.sim.toolfile import load_tools

    if options.tools is not None:
        return [str(t["name"]) for t in load_tools(options.tools)]
    from agentworld.train.sweep import load_world_tasks

    assert options.world is not None
    _, spec, _ = load_world_tasks(options.world)
    return [str(t["name"]) for t in spec.tools]


def write_verl_config(options: VerlConfigOptions) -> dict[str, Path]:
    """Write the files (see the module docstring); return them by name.

    Raises:
        DataError: the tools file or world folder does not load, or OUT is a file.
    """
    out = options.out
    if out.exists() and not out.is_dir():
        raise DataError("--out must be a folder, not a file", path=str(out))
    names = _tool_names(options)
    out.mkdir(parents=True, exist_ok=True)
    written = {"mcp_server": out / "mcp_server.json", "mcp_tool_config": out / "mcp_tool_config.yaml",
               "agent_loop": out / "agent_loop.yaml"}
    atomic_write_text(written["mcp_server"], json.dumps(
        {"mcpServers": {SERVER_NAME: _server_entry(options)}}, indent=2) + "\n")
    tool_config = {"tools": [{
        "class_name": MCP_TOOL_CLASS,
        "config": {"type": MCP, "rate_limit": options.rate_limit, "timeout": options.timeout_s},
        MCP: {"mcp_servers_config_path": str(written["mcp_server"].resolve()),
                "tool_selected_list": names}}]}
    atomic_write_text(written["mcp_tool_config"], yaml.safe_dump(tool_config, sort_keys=False))
    loop: dict[str, Any] = {"name": SERVER_NAME, "_target_": AGENT_LOOP_CLASS, "model": options.model,
                            "model_base_url": options.model_base_url, "max_turns": options.max_turns}
    atomic_write_text(written["agent_loop"], yaml.safe_dump([loop], sort_keys=False))
    if options.world is not None:
        written["dataset"] = out / "dataset.jsonl"
        atomic_write_jsonl(written["dataset"], dataset_rows(options.world, options.seed))
    return written


def dataset_rows(world: Path, seed: int = 0) -> list[dict[str, Any]]:
    """One verl dataset row per task of the world: ``prompt``, ``agent_name`` and the ``agentworld`` field.

    The ``agentworld`` field is JSON text, so the rows keep one column type in a parquet file.
    """
    from agentworld.train.sweep import load_world_tasks

    _, _, tasks = load_world_tasks(world)
    folder = str(world.resolve())
    return [{"data_source": "agentworld", "agent_name": SERVER_NAME,
             "prompt": [{"role": "user", "content": task.instruction}],
             "agentworld": json.dumps({"world": folder, "task_id": task.id, "seed": seed + i}),
             "reward_model": {"style": "rule", "ground_truth": ""}}
            for i, task in enumerate(tasks)]

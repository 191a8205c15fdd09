"""Real environments for recording world-model data: a bubblewrap sandbox, a tmux terminal, a recorder."""

from agentworld.envs.record import (
    Action,
    RecordError,
    Scenario,
    builtin_scenarios_dir,
    format_action,
    format_observation,
    load_scenarios,
    record_scenario,
    record_scenarios,
    record_to_jsonl,
    trajectory_rows,
)
from agentworld.envs.sandbox import (
    RunResult,
    Sandbox,
    SandboxConfig,
    SandboxError,
    SandboxTimeoutError,
    container_id,
    missing_tools,
)
from agentworld.envs.terminal import TerminalSession, is_key_name

__all__ = [
    "Action",
    "RecordError",
    "RunResult",
    "Sandbox",
    "SandboxConfig",
    "SandboxError",
    "SandboxTimeoutError",
    "Scenario",
    "TerminalSession",
    "builtin_scenarios_dir",
    "container_id",
    "format_action",
    "format_observation",
    "is_key_name",
    "load_scenarios",
    "missing_tools",
    "record_scenario",
    "record_scenarios",
    "record_to_jsonl",
    "trajectory_rows",
]

"""Real environments for recording world-model data: a bubblewrap sandbox, a tmux terminal, a recorder."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworld.lazy import lazy_exports

if TYPE_CHECKING:
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

_EXPORTS = {
    "Action": "agentworld.envs.record",
    "RecordError": "agentworld.envs.record",
    "Scenario": "agentworld.envs.record",
    "builtin_scenarios_dir": "agentworld.envs.record",
    "format_action": "agentworld.envs.record",
    "format_observation": "agentworld.envs.record",
    "load_scenarios": "agentworld.envs.record",
    "record_scenario": "agentworld.envs.record",
    "record_scenarios": "agentworld.envs.record",
    "record_to_jsonl": "agentworld.envs.record",
    "trajectory_rows": "agentworld.envs.record",
    "RunResult": "agentworld.envs.sandbox",
    "Sandbox": "agentworld.envs.sandbox",
    "SandboxConfig": "agentworld.envs.sandbox",
    "SandboxError": "agentworld.envs.sandbox",
    "SandboxTimeoutError": "agentworld.envs.sandbox",
    "container_id": "agentworld.envs.sandbox",
    "missing_tools": "agentworld.envs.sandbox",
    "TerminalSession": "agentworld.envs.terminal",
    "is_key_name": "agentworld.envs.terminal",
}
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
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

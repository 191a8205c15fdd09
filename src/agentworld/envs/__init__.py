"""Domain-free machinery of real environments: a bubblewrap sandbox, a tmux terminal driver.

Recorders that turn these into AgentWorldBench rows live in their domain's package (the terminal's:
:mod:`agentworld.domains.terminal.record`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworld.lazy import lazy_exports

if TYPE_CHECKING:
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
    "RunResult",
    "Sandbox",
    "SandboxConfig",
    "SandboxError",
    "SandboxTimeoutError",
    "TerminalSession",
    "container_id",
    "is_key_name",
    "missing_tools",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

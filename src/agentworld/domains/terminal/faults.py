"""Injected error faults on a terminal, shown without a model: the command echoed, an error, a prompt."""

from __future__ import annotations

from collections.abc import Sequence

from agentworld.domains.actions import last_prompt
from agentworld.domains.hooks import ParsedAction
from agentworld.domains.spec import InjectedFault


def shell_prompt(screen: str) -> str | None:
    """The last shell prompt of a screen without its command (``root@abc:/app#``), if any."""
    m = last_prompt(screen)
    return f"{m['user']}@{m['host']}:{m['cwd']}{m['sigil']}" if m else None


def render_fault(fault: InjectedFault, parsed: ParsedAction, screens: Sequence[str]) -> str:
    """The screen a failing command leaves: ``<prompt> <command>``, the error, the prompt again.

    The prompt is the last one shown in the episode (``screens``, oldest first), so the working
    directory the agent sees stays the same.
    """
    d = fault.detail
    prompt = next((p for p in map(shell_prompt, reversed(screens)) if p), None)
    word = parsed.tool or "bash"
    body = {
        "timeout": f"{word}: operation timed out after {d.get('timeout_s', 30)}s",
        "server_error": f"{word}: error: {d.get('status', 503)} {d.get('reason', 'Service Unavailable')}",
        "rate_limit": f"{word}: error: 429 Too Many Requests (retry after {d.get('retry_after_s', 2)}s)",
        "permission_denied": f"bash: {word}: Permission denied",
    }[fault.kind]
    line = (parsed.command or "").strip().splitlines()
    head = f"{prompt} {line[0]}" if prompt and line else (prompt or "")
    return "\n".join(x for x in (head, body, prompt or "") if x)

"""The terminal's real environment: a sandboxed bash in tmux (``envs.terminal.TerminalSession``).

Actions are the row's action text (``**Action:**`` and a fenced keystroke list, the first turn's
``**Current State:**`` allowed) or the keystroke list itself; observations are the screens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from agentworld.domains.terminal.routing import Action, at_shell_prompt, keystroke_steps


class Terminal(Protocol):
    """What the environment needs of :class:`agentworld.envs.terminal.TerminalSession`."""

    def initial_screen(self) -> str: ...
    def step(self, actions: Sequence[Mapping[str, Any]]) -> str: ...
    def close(self) -> None: ...


class TerminalEnvironment:
    """One real terminal episode (a :class:`~agentworld.domains.base.RealEnvironment`).

    Attributes:
        awaiting_input: the last screen does not end at a bare shell prompt — a program (a REPL, a
            pager) is still running, so the next keystrokes are its input and must go to it.
    """

    def __init__(self, terminal: Terminal) -> None:
        self._terminal = terminal
        self.awaiting_input = False

    def initial_observation(self) -> str:
        return self._terminal.initial_screen()

    def step(self, action: Action) -> str:
        screen = self._terminal.step(keystroke_steps(action))
        self.awaiting_input = not at_shell_prompt(screen)
        return screen

    def close(self) -> None:
        """Stop the shell, tmux and the sandbox (idempotent)."""
        self._terminal.close()


def open_environment(seed: int = 0, **options: Any) -> TerminalEnvironment:
    """A fresh sandboxed terminal; ``seed`` gives its hostname, ``options`` go to ``TerminalSession``."""
    from agentworld.envs.terminal import TerminalSession

    return TerminalEnvironment(TerminalSession(seed=seed, **options))

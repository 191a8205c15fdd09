"""The terminal ledger: cwd, host, user, files and variables a shell session established.

Each action's keystrokes are read by a small shell reader (quotes, ``$VAR``, redirections,
heredocs, ``&&``/``;``/``|``) and replayed on the ledger's facts: ``cd``/``pushd``/``popd``, ``export``
and assignments, ``echo``/``printf``/heredoc writes, ``touch``/``rm``/``mv``/``cp``/``mkdir``. What the
reader cannot follow makes the ledger forget instead of guess: an unknown command (``python3 x.py``,
``git checkout``) may change any file, so file contents become unknown; control flow, nested shells or
line editing hand the cwd back to the observed prompt. Checks fire only on facts that are certain,
which is why the real recordings of the shipped corpus pass without a contradiction.

This module wires the parts together: :mod:`.shell_reader` reads the keystrokes,
:mod:`.shell_replay` replays them on :mod:`.shell_facts`, and
:mod:`.checks` finds and repairs contradictions.
"""

from __future__ import annotations

import copy
import re

from agentworld.domains.actions import PROMPT_RE, terminal_state
from agentworld.domains.ledger import Contradiction, bounded
from agentworld.domains.spec import WorldSpec
from agentworld.domains.terminal.checks import CD_ERROR, Finding, Fix, check_output, check_prompts
from agentworld.domains.terminal.shell_facts import ShellFacts, absolute_path, forget_changes
from agentworld.domains.terminal.shell_reader import (
    Command,
    Part,
    Script,
    Word,
    expand,
    expand_text,
    parse_script,
    printf_format,
    unescape_echo,
)
from agentworld.domains.terminal.shell_replay import GIT_PURE, PURE, SHELLS, Step, replay
from agentworld.schema import OBSERVATION_MARKER

__all__ = ["GIT_PURE", "PURE", "SHELLS", "Command", "Finding", "Fix", "Part", "Script", "ShellFacts",
           "Step", "TerminalLedger", "Word", "expand", "expand_text", "open_ledger", "parse_script",
           "printf_format", "unescape_echo"]

_ERROR = re.compile(r"No such file|Permission denied|Read-only file system|cannot |Is a directory|"
                    r"Not a directory|No space left|not permitted|command not found|[Ee]rror")


class TerminalLedger:
    """The :class:`~agentworld.domains.ledger.Ledger` of a bash session (see the module docstring)."""

    def __init__(self, initial_screen: str | None = None) -> None:
        self.facts = ShellFacts()
        if initial_screen:
            self._adopt_prompt(initial_screen.splitlines(), self.facts)

    # -- Ledger protocol ----------------------------------------------------------------------------

    def summary(self) -> str:
        f = self.facts
        lines = []
        if f.cwd or f.host:
            lines.append(f"shell: {f.user or '?'}@{f.host or '?'} cwd {f.cwd or '?'}")
        if f.env:
            lines.append("env: " + ", ".join(f"{k}={v!r}" for k, v in sorted(f.env.items())))
        for path, content in sorted(f.files.items()):
            if content is None:
                lines.append(f"file {path} (content changed since written)")
            else:
                head = content if len(content) <= 60 else content[:57] + "..."
                size = f"{len(content.encode())} B, {content.count(chr(10))} lines"
                lines.append(f"file {path} ({size}): {head!r}")
        if f.removed:
            lines.append("removed: " + ", ".join(sorted(f.removed)))
        for path, names in sorted(f.dirs.items()):
            lines.append(f"dir {path}/ holds exactly: {', '.join(sorted(names)) or '(empty)'}")
        return bounded(lines) if lines else ""

    def check(self, action: str, observation: str) -> list[Contradiction]:
        return [c for c, _ in self._analyse(action, observation)]

    def repair(self, action: str, observation: str, found: list[Contradiction]) -> str | None:
        lines = _screen(observation).splitlines()
        fixes = sorted({fix for c, fix in self._analyse(action, observation) if c in found and fix},
                       key=lambda f: -f.start)
        if not fixes:
            return None
        for fix in fixes:
            lines[fix.start:fix.end] = fix.lines
        text = "\n".join(lines)
        return None if text == _screen(observation) else text

    def update(self, action: str, observation: str) -> None:
        screen = _screen(observation)
        lines = screen.splitlines()
        before = self.facts
        self._seed_from_action(action, before)
        step = replay(action, before)
        after = step.after
        if step.executed and _ERROR.search("\n".join(lines[1:-1])):
            forget_changes(before, after)
        m = PROMPT_RE.match(lines[-1].rstrip()) if lines else None
        if m and (step.resync or after.host is None):
            after.user, after.host = m.group("user"), m.group("host")
        if m and (step.resync or after.cwd is None or CD_ERROR.search(screen)):
            after.cwd = absolute_path(m.group("cwd"), after.home)
        after.at_prompt = m is not None
        self.facts = after

    # -- analysis ---------------------------------------------------------------------------------

    def _analyse(self, action: str, observation: str) -> list[Finding]:
        facts = copy.deepcopy(self.facts)
        self._seed_from_action(action, facts)
        if facts.host is None:
            return []
        lines = _screen(observation).splitlines()
        step = replay(action, facts)
        out = check_prompts(lines, facts, step, observation)
        if step.executed and not step.resync and len(step.commands) == 1:
            out += check_output(step.commands[0], lines, facts)
        return out

    # -- prompts -----------------------------------------------------------------------------------

    def _seed_from_action(self, action: str, facts: ShellFacts) -> None:
        if facts.host is None:
            state = terminal_state(action)
            if state:
                self._adopt_prompt(state.splitlines(), facts)

    @staticmethod
    def _adopt_prompt(lines: list[str], facts: ShellFacts) -> None:
        """Take host, user and cwd from the last prompt line of a screen."""
        for line in reversed(lines):
            m = PROMPT_RE.match(line.rstrip())
            if m:
                facts.user, facts.host = m.group("user"), m.group("host")
                facts.cwd = absolute_path(m.group("cwd"), facts.home)
                return


def _screen(observation: str) -> str:
    text = observation.strip("\n")
    return text.split(OBSERVATION_MARKER, 1)[1].strip("\n") if OBSERVATION_MARKER in text else text



def open_ledger(spec: WorldSpec | None = None) -> TerminalLedger:
    """The ledger of a new episode; host, user and cwd come from the prompt in ``spec.initial_state``."""
    return TerminalLedger(initial_screen=spec.initial_state if spec else None)

"""``agentworld shell``: a person types into a simulated terminal (or MCP server) and sees what it shows.

Why: the quickest way to judge a world model is to use it. Each line typed becomes one action
(terminal: ``[{"keystrokes": line + "\\n", "duration": 1.0}]``; mcp: the line is a JSON tool call;
other domains: the text). The Simulator keeps the prompt, the working directory and the ledger;
each observation is tagged with its source (``[model]``, ``[real]``, ``[cache]`` …), and the
model's reasoning is shown on request. Special inputs: ``^C`` (Ctrl-C), ``:wait N`` (wait N
seconds), ``:state`` (ledger summary), ``:help``, ``:quit``. :func:`run_shell` reads any text
stream, so tests drive it with a scripted model.
"""

from __future__ import annotations

from typing import Any, TextIO

from agentworld.domains.hooks import DomainActions, domain_actions
from agentworld.errors import AgentWorldError
from agentworld.sim.session import Simulator
from agentworld.sim.types import StepResult, WorldSpec

TAGS = {"world_model": "model", "cache": "cache", "real": "real", "fault": "fault", "template": "template"}
HELP = ("Type a command and press Enter. ^C sends Ctrl-C, :wait N waits N seconds, :state shows the "
        "tracked state, :quit leaves.")


def _dim(text: str, color: bool) -> str:
    return f"\x1b[2m{text}\x1b[0m" if color else text


def shell_action(line: str, domain: str) -> Any:
    """The Simulator action for one typed line (``None``: nothing to send, e.g. an empty MCP line).

    Raises:
        ValueError: a line that is not an action of the domain (an MCP line that is not a JSON call).
    """
    return domain_actions(domain).from_line(line)


def describe(result: StepResult) -> str:
    """The source tag of one observation, e.g. ``[model 0.8s]``, ``[fault: timeout]``."""
    parts = [TAGS.get(result.source, result.source)]
    if result.fault is not None:
        parts[0] += f": {result.fault.kind}"
    if result.latency_s:
        parts.append(f"{result.latency_s:.1f}s")
    if result.repaired:
        parts.append("repaired")
    return "[" + " ".join(parts) + "]"


class _Screen:
    """Prints observations like a terminal: the pending prompt is the input prompt, never repeated."""

    def __init__(self, out: TextIO, color: bool, actions: DomainActions) -> None:
        self.out, self.color, self.actions, self.prompt = out, color, actions, ""

    def show(self, text: str, tag: str | None = None, reasoning: str | None = None) -> None:
        lines = text.splitlines()
        if self.prompt and lines and lines[0].startswith(self.prompt):
            lines = lines[1:]  # the prompt and the typed line are already on screen
        if tag:
            self.out.write(_dim(tag, self.color) + "\n")
        for line in (reasoning or "").strip().splitlines():
            self.out.write(_dim(f"│ {line}", self.color) + "\n")
        prompt = lines[-1] if lines and self.actions.is_prompt_line(lines[-1]) else ""
        body = lines[:-1] if prompt else lines
        if body:
            self.out.write("\n".join(body) + "\n")
        self.prompt = prompt.rstrip()
        self.out.write(f"{self.prompt} " if self.prompt else "> ")
        self.out.flush()

    def note(self, text: str) -> None:
        self.out.write(_dim(text, self.color) + "\n" + (f"{self.prompt} " if self.prompt else "> "))
        self.out.flush()


def run_shell(simulator: Simulator, stdin: TextIO, stdout: TextIO, *, spec: WorldSpec | None = None,
              seed: int = 0, show_reasoning: bool = False, color: bool = False,
              echo: bool | None = None) -> int:
    """Run the interactive loop until ``:quit`` or end of input; returns the number of steps taken.

    Args:
        simulator: the simulator to drive (its router, if any, is reset with ``seed``).
        stdin: where lines are read from.
        stdout: where screens are written.
        spec: the world (default: a terminal).
        seed: episode seed (sandbox hostname, fault draws).
        show_reasoning: print the model's reasoning (dim, ``│``-prefixed) above each observation.
        color: dim tags with ANSI escapes.
        echo: write each input line after the prompt (default: when ``stdin`` is not a terminal, so
            piped sessions read like a transcript).
    """
    spec = spec or WorldSpec()
    echo = (not stdin.isatty()) if echo is None else echo
    router = getattr(simulator, "router", None)
    if router is not None and hasattr(router, "reset"):
        router.reset(seed)
    screen = _Screen(stdout, color, domain_actions(spec.domain))
    screen.show(simulator.reset(spec, seed=seed))
    steps = 0
    for raw in stdin:
        line = raw.rstrip("\n")
        if echo:
            stdout.write(line + "\n")
        command = line.strip()
        if command in (":quit", ":q", ":exit"):
            break
        if command == ":help":
            screen.note(HELP)
            continue
        if command == ":state":
            state = simulator.state()
            screen.note(f"turn {state.turn}, seed {state.seed}\n{state.ledger or '(no tracked state yet)'}")
            continue
        try:
            action = shell_action(line, spec.domain)
            if action is None:
                screen.note("")
                continue
            result = simulator.step(action)
        except (ValueError, AgentWorldError) as exc:
            screen.note(f"error: {exc}")
            continue
        steps += 1
        screen.show(result.observation, describe(result), result.reasoning if show_reasoning else None)
    stdout.write("\n")
    return steps

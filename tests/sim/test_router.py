"""Terminal sim-to-real routing: rule decisions, routing state, a real routed step in the sandbox."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from agentworld.domains.actions import format_terminal_action
from agentworld.domains.terminal.env import TerminalEnvironment
from agentworld.domains.terminal.routing import (
    at_shell_prompt,
    classify_script,
    command_words,
    keystroke_steps,
)
from agentworld.envs.sandbox import missing_tools
from agentworld.models.scripted import ScriptedBackend
from agentworld.sim import Simulator, WorldSpec
from agentworld.sim.router import Router

needs_sandbox = pytest.mark.skipif(bool(missing_tools()) or shutil.which("tmux") is None,
                                   reason="needs bubblewrap and tmux")


def keys(line: str, duration: float = 1.0) -> list[dict[str, Any]]:
    return [{"keystrokes": line + "\n", "duration": duration}]


@pytest.mark.parametrize(("command", "route"), [
    ("ls -la", "real"),
    ("cat notes.txt | grep todo | wc -l", "real"),
    ("echo hello > out.txt && cat out.txt", "real"),
    ("python3 -c 'print(1 + 1)'", "real"),
    ("mkdir -p src/pkg; cd src/pkg", "real"),
    ("git status", "real"),
    ("git log --oneline -3", "real"),
    ("for f in *.txt; do wc -l $f; done", "real"),
    ("X=1 timeout 5 ls", "real"),
    ("./run.sh", "real"),
    ("echo 'curl http://x | sh'", "real"),
    ("cat > app.py << 'EOF'\nimport requests\ncurl x\nEOF", "real"),
    ("curl -s https://example.com", "model"),
    ("wget https://example.com/file.tar.gz", "model"),
    ("pip install requests", "model"),
    ("python3 -m pip install numpy", "model"),
    ("apt-get install -y jq", "model"),
    ("git clone https://github.com/x/y", "model"),
    ("git push origin main", "model"),
    ("ssh user@host ls", "model"),
    ("systemctl restart nginx", "model"),
    ("sudo ls /root", "model"),
    ("docker ps", "model"),
    ("mount /dev/sdb1 /mnt", "model"),
    ("ls | xargs curl -O", "model"),
    ("echo $(wget -qO- http://x)", "model"),
    ("frobnicate-the-widgets --now", "model"),
    ("echo 'unbalanced", "model"),
])
def test_rules_table(command: str, route: str) -> None:
    assert classify_script(command).route == route
    assert Router().route("terminal", keys(command)) == route


def test_command_words_split_pipelines_lists_and_substitutions() -> None:
    assert command_words("a x | b && c; d $(e f) `g`") == [["a", "x"], ["b"], ["c"], ["d", "$"], ["e", "f"],
                                                            ["g"]]


def test_cost_preference_runs_only_cheap_short_commands_for_real() -> None:
    assert Router(prefer="cost").route("terminal", keys("ls")) == "real"
    assert Router(prefer="cost").route("terminal", keys("make -j8")) == "model"
    assert Router(prefer="fidelity").route("terminal", keys("sleep 30", 30.0)) == "real"
    assert Router(prefer="cost").route("terminal", keys("sleep 30", 30.0)) == "model"


def test_policies_and_other_domains() -> None:
    assert Router("real").route("terminal", keys("curl x")) == "real"
    assert Router("model").route("terminal", keys("ls")) == "model"
    assert Router().route("mcp", {"tool_name": "ls", "arguments": {}}) == "model"
    with pytest.raises(ValueError, match="route policy"):
        Router("sometimes")  # type: ignore[arg-type]


def test_model_side_effects_make_later_steps_stay_with_the_model() -> None:
    router = Router()
    assert router.route("terminal", keys("ping -c1 example.com")) == "model"
    assert not router.diverged  # only prints: the sandbox still matches
    assert router.route("terminal", keys("ls")) == "real"
    assert router.route("terminal", keys("git clone https://x/y")) == "model"
    assert router.diverged
    assert router.decide("terminal", keys("ls")).reason.startswith("an earlier model step")
    router.reset(seed=3)
    assert (router.seed, router.diverged) == (3, False)
    assert router.route("terminal", keys("ls")) == "real"


class FakeTerminal:
    """Stands in for the sandbox: a REPL that starts on ``python3`` and ends on ``exit()``."""

    def __init__(self, seed: int) -> None:
        self.seed, self.sent, self.closed, self.repl = seed, [], False, False

    def initial_screen(self) -> str:
        return "root@abc:/app#"

    def step(self, actions: Sequence[Mapping[str, Any]]) -> str:
        text = "".join(str(a["keystrokes"]) for a in actions)
        self.sent.append(text)
        self.repl = (self.repl or text == "python3\n") and text != "exit()\n"
        return f"{text.strip()}\n" + (">>>" if self.repl else "root@abc:/app#")

    def close(self) -> None:
        self.closed = True


def test_input_to_a_running_program_and_bare_keys_follow_the_real_session() -> None:
    terminals: list[FakeTerminal] = []
    def factory(seed: int) -> TerminalEnvironment:
        terminals.append(FakeTerminal(seed))
        return TerminalEnvironment(terminals[-1])

    router = Router(environment_factory=factory, seed=7, max_real_steps=4)
    assert router.route("terminal", keys("python3")) == "real"
    asyncio.run(router.execute(keys("python3")))
    assert router.route("terminal", keys("import requests")) == "real"  # typed into the REPL
    asyncio.run(router.execute(keys("exit()")))
    assert router.route("terminal", [{"keystrokes": "C-c", "duration": 0.1}]) == "real"
    assert router.route("terminal", keys("ls")) == "real"
    asyncio.run(router.execute(keys("ls")))
    asyncio.run(router.execute(keys("ls")))
    assert router.real_steps == 4
    assert router.decide("terminal", keys("ls")).reason == "real-step budget of 4 used"
    assert terminals[0].seed == 7 and terminals[0].sent[0] == "python3\n"
    router.close()
    assert terminals[0].closed


def test_action_forms_and_prompt_detection() -> None:
    steps = keys("ls")
    assert keystroke_steps(steps) == steps
    assert keystroke_steps(steps[0]) == steps
    assert keystroke_steps('[{"keystrokes": "ls\\n", "duration": 1.0}]') == steps
    assert keystroke_steps('**Action:**\n```json\n[{"keystrokes": "ls\\n", "duration": 1.0}]\n```') == steps
    first_turn = ('**Current State:**\n```\nroot@abc:/app#\n```\n\n'
                  '**Action:**\n```json\n[{"keystrokes": "ls\\n"}]\n```')
    assert keystroke_steps(first_turn) == [{"keystrokes": "ls\n"}]
    typed = [{"keystrokes": "echo '**Action:** ```'\n", "duration": 1.0}]
    screen = "root@abc:/app# echo '**Action:**'\n**Action:**\nroot@abc:/app#"
    assert keystroke_steps(format_terminal_action(typed, screen)) == typed
    with pytest.raises(ValueError, match="keystroke"):
        keystroke_steps("ls")
    assert at_shell_prompt("root@abc:/app# ls\na\nroot@abc:/app#")
    assert not at_shell_prompt("root@abc:/app# python3\n>>>")


@pytest.mark.sandbox
@needs_sandbox
def test_real_routed_step_runs_in_the_sandbox_and_enters_the_history() -> None:
    router = Router(seed=11)
    model = ScriptedBackend(["<predicted_observation>\nroot@x:/app# curl -s http://example.com\n<html>\n"
                             "root@x:/app#\n</predicted_observation>"])
    sim = Simulator(model, router=router, ledger=False)
    try:
        sim.reset(WorldSpec(domain="terminal"), seed=11)
        real = sim.step(keys("echo hi-from-sandbox > f.txt && cat f.txt", 2.0))
        assert real.source == "real"
        assert "hi-from-sandbox" in real.observation.splitlines()[-2]
        assert real.observation.splitlines()[0].startswith("root@")
        assert router.real_steps == 1
        imagined = sim.step(keys("curl -s http://example.com"))
        assert imagined.source == "world_model"
        assert real.observation in model.calls[0].messages[-2].content  # the real turn is in the prompt
        assert [t.source for t in sim.history] == ["real", "world_model"]
    finally:
        sim.close()
        router.close()

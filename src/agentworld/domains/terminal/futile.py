"""Terminal tasks where the obvious action fails for real, to measure what predicting before acting saves.

Why these: they are the everyday ways an agent burns a step in Terminal-Bench-like work — ``pip
install`` into an externally managed Python, writing into or entering a directory that does not
exist, a command that is not installed (or ``python`` where only ``python3`` is), a git command
outside the repository, a script without the execute bit, a file name guessed wrong, a command that
never returns (``tail -f``, a poll loop without a timeout, a bare REPL). Each task lists the futile
candidate first (an agent that does not plan takes it) and one that works, a setup typed into a
fresh sandbox, and a success check that runs on the *real* sandbox afterwards: the terminal must be
back at its prompt, the output must show ``expect`` and the shell command ``check`` must succeed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentworld.domains.actions import PROMPT_RE
from agentworld.domains.plan_tasks import PlanSuite

__all__ = ["SUITE", "TASKS", "Candidate", "FutileTask", "open_task_environment", "solved"]

SEED = 0
CHECK_MARK = "CHECK_$((6*7))"
"""Printed by the success check; the screen shows ``CHECK_42`` only if it ran (the echo shows the $)."""


@dataclass(frozen=True)
class Candidate:
    """One command the agent may type, and whether it accomplishes the task for real."""

    command: str
    works: bool
    duration_s: float = 1.0

    def action(self) -> list[dict[str, Any]]:
        """The terminal action (a Terminal-Bench keystroke list)."""
        return [{"keystrokes": self.command + "\n", "duration": self.duration_s}]


@dataclass(frozen=True)
class FutileTask:
    """A task, its setup (typed into the fresh sandbox), its candidates and its real success check."""

    name: str
    goal: str
    setup: str
    candidates: tuple[Candidate, ...]
    expect: str = ""
    check: str = "true"
    errors: tuple[str, ...] = ()
    """Failure patterns of this task's imagined screens besides the terminal's own."""


_WHEEL = ("python3 -c \"import zipfile; z = zipfile.ZipFile('greet-0.1-py3-none-any.whl', 'w'); "
          "z.writestr('greet.py', 'def hi():\\n    return 1\\n'); "
          "z.writestr('greet-0.1.dist-info/METADATA', "
          "'Metadata-Version: 2.1\\nName: greet\\nVersion: 0.1\\n'); "
          "z.writestr('greet-0.1.dist-info/WHEEL', "
          "'Wheel-Version: 1.0\\nGenerator: x\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n'); "
          "z.writestr('greet-0.1.dist-info/RECORD', '')\"")

TASKS: tuple[FutileTask, ...] = (
    FutileTask("pip-managed", "Install the greet wheel in /app so that Python can import greet.", _WHEEL,
               (Candidate("pip install greet-0.1-py3-none-any.whl", False, 5.0),
                Candidate("pip install -q --root-user-action=ignore --no-index --target /app/vendor "
                          "greet-0.1-py3-none-any.whl", True, 10.0)),
               check="PYTHONPATH=/app/vendor python3 -c 'import greet'",
               errors=(r"externally-managed-environment",)),
    FutileTask("cd-missing", "Create /app/project/notes.txt containing the line todo.", "true",
               (Candidate("cd /app/project && echo todo > notes.txt", False),
                Candidate("mkdir -p /app/project && echo todo > /app/project/notes.txt", True)),
               check="grep -qx todo /app/project/notes.txt"),
    FutileTask("write-missing-dir", "Save the output of uname to out/system.txt.", "true",
               (Candidate("uname > out/system.txt", False),
                Candidate("mkdir -p out && uname > out/system.txt", True)),
               check="grep -q Linux /app/out/system.txt"),
    FutileTask("not-installed", "Show how many lines of notes.md contain TODO.",
               "printf 'TODO one\\ndone\\nTODO two\\n' > notes.md",
               (Candidate("rg -c TODO notes.md", False), Candidate("grep -c TODO notes.md", True)),
               expect="2"),
    FutileTask("python-alias", "Run stats.py and show its result.",
               "printf 'print(\"mean=\" + str(sum([1, 2, 3, 4]) / 4))\\n' > stats.py",
               (Candidate("python stats.py", False), Candidate("python3 stats.py", True)), expect="mean=2.5"),
    FutileTask("not-a-repo", "Show the subject of the last commit of the repository in /app/repo.",
               "git init -q repo && git -C repo -c user.email=a@b.c -c user.name=a commit -q --allow-empty "
               "-m 'initial import'",
               (Candidate("git log -1 --format=%s", False),
                Candidate("git -C repo log -1 --format=%s", True)),
               expect="initial import", errors=(r"^fatal: ",)),
    FutileTask("no-exec-bit", "Run the build script build.sh.", "printf 'echo build ok\\n' > build.sh",
               (Candidate("./build.sh", False), Candidate("sh build.sh", True)), expect="build ok"),
    FutileTask("wrong-name", "Show the project's README.", "printf 'Run make test\\n' > README.md",
               (Candidate("cat README", False), Candidate("cat README.md", True)), expect="Run make test"),
    FutileTask("follow-forever", "Show the last line of app.log.",
               "seq 1 500 | sed 's/^/line /' > app.log",
               (Candidate("tail -f app.log", False), Candidate("tail -n 1 app.log", True)),
               expect="line 500"),
    FutileTask("no-timeout", "Find out whether wait.py finishes within 2 seconds (its exit status).",
               "printf 'import time\\nwhile True:\\n    print(\"waiting for server...\")\\n"
               "    time.sleep(0.5)\\n' > wait.py",
               (Candidate("python3 wait.py", False, 2.0),
                Candidate("timeout 2 python3 wait.py; echo exit=$?", True, 4.0)), expect="exit=124"),
    FutileTask("bare-repl", "Print 2 to the power of 100.", "true",
               (Candidate("python3", False), Candidate("python3 -c 'print(2 ** 100)'", True)),
               expect="1267650600228229401496703205376"),
)
"""The futile-action task set (11 tasks): each candidate's real outcome is checked by ``bench``."""


def open_task_environment(task: FutileTask, seed: int = SEED, **options: Any) -> Any:
    """A fresh sandboxed terminal with the task's setup done and the screen cleared."""
    from agentworld.domains.terminal.env import open_environment

    env = open_environment(seed, **options)
    env.initial_observation()
    env.step([{"keystrokes": f"{task.setup}; clear\n", "duration": 10.0}])
    return env


def solved(task: FutileTask, env: Any, observations: Sequence[str]) -> bool:
    """The real success check: back at the prompt, ``expect`` shown as a line, ``check`` succeeds."""
    from agentworld.domains.terminal.actions import ACTIONS

    lines = (observations[-1].rstrip().splitlines() or [""]) if observations else [""]
    if not ACTIONS.is_prompt_line(lines[-1]):
        return False
    shown = {line.strip() for text in observations for line in text.splitlines() if not PROMPT_RE.match(line)}
    if task.expect and task.expect not in shown:
        return False
    screen = env.step([{"keystrokes": f"{{ {task.check}; }} >/dev/null 2>&1 && echo {CHECK_MARK}\n",
                        "duration": 5.0}])
    return any(line.strip() == "CHECK_42" for line in screen.splitlines())


SUITE = PlanSuite(tasks=TASKS, open_environment=open_task_environment, solved=solved)
"""What the planner benchmark runs for the terminal (``DomainPlugin.plan_tasks``)."""

"""Every ``agentworld …`` command in the README's shell blocks parses against the CLI as it is.

Why: recipes (serving, evaluation, training) are copied by users verbatim; an option renamed or
removed in the code must fail here, not on a user's GPU machine after the model has loaded. Each
command is resolved to its sub-command, each ``--option`` must be one that command accepts, and a
command without placeholders (``$VAR``, ``…``) must parse completely, values and required options
included (click's own parser, nothing is run).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer

from agentworld.cli import app
from agentworld.cli_click import ClickException, Command, Context

README = Path(__file__).parent.parent / "README.md"
SHELL_BLOCK = re.compile(r"^```(?:bash|sh|shell|console)\n(.*?)^```", re.M | re.S)
COMMAND = re.compile(r"^(?:\$ )?(?:[A-Z_]+=\S+ )*(?:\.venv/bin/)?agentworld\s")
PLACEHOLDER = re.compile(r"\$|\.\.\.|…|<[a-z]|\[-")


def readme_commands() -> list[tuple[int, str]]:
    """``(line number, command)`` for each agentworld command in a shell block (continuations joined)."""
    text = README.read_text(encoding="utf-8")
    found: list[tuple[int, str]] = []
    for block in SHELL_BLOCK.finditer(text):
        first_line = text.count("\n", 0, block.start(1)) + 1
        lines = block.group(1).split("\n")
        i = 0
        while i < len(lines):
            start, command = i, lines[i]
            while command.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command.rstrip()[:-1] + " " + lines[i].strip()
            i += 1
            if COMMAND.match(command.strip()):
                found.append((first_line + start, command.strip().removeprefix("$ ")))
    return found


def _argv(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words: list[str] = []
    for word in lexer:
        if word and set(word) <= set(";&|"):
            break  # the next command of a pipeline or list
        words.append(word)
    while words and "=" in words[0] and not words[0].startswith("-"):
        words.pop(0)  # VAR=value before the command
    return words[1:]


COMMANDS = readme_commands()


def test_the_readme_has_commands_to_check() -> None:
    assert len(COMMANDS) >= 25


@pytest.mark.parametrize(("line", "command"), COMMANDS, ids=[f"README:{n}" for n, _ in COMMANDS])
def test_readme_command_parses(line: int, command: str) -> None:
    root = typer.main.get_command(app)
    argv = _argv(command)
    ctx = Context(root, info_name="agentworld")
    cmd: Command = root
    path = ["agentworld"]
    while hasattr(cmd, "get_command") and argv and not argv[0].startswith("-") and argv[0] != "--":
        sub = cmd.get_command(ctx, argv[0])
        assert sub is not None, f"README:{line}: `{' '.join(path)}` has no sub-command {argv[0]!r}: {command}"
        path.append(argv.pop(0))
        cmd = sub
        ctx = Context(cmd, info_name=path[-1], parent=ctx)
    runs_itself = not hasattr(cmd, "get_command") or getattr(cmd, "invoke_without_command", False)
    assert runs_itself, f"README:{line}: {' '.join(path)} needs a sub-command: {command}"
    known = {opt for param in cmd.params for opt in (*param.opts, *param.secondary_opts)} | {"--help"}
    own = argv[:argv.index("--")] if "--" in argv else argv  # after --: the wrapped program's own argv
    unknown = [word.split("=")[0] for word in own
               if word.startswith("--") and word.split("=")[0] not in known]
    assert not unknown, f"README:{line}: {' '.join(path)} has no option {unknown}: {command}"
    if PLACEHOLDER.search(command) or "--help" in argv:
        return
    try:
        cmd.make_context(path[-1], list(argv), parent=ctx.parent)
    except ClickException as exc:
        pytest.fail(f"README:{line}: {' '.join(path)} does not parse ({exc.format_message()}): {command}")

"""Every ``agentworld …`` command line in the README names a command and options that exist."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer

from agentworld.cli import app

README = Path(__file__).parents[1] / "README.md"


def _command_lines() -> list[str]:
    """``agentworld`` invocations inside the README's bash blocks, continuation lines joined."""
    text = README.read_text(encoding="utf-8")
    lines: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.split("#", 1)[0].strip()
            match = re.search(r"(?:^|\s|/)agentworld\s+(.*)$", line)
            if match and not line.startswith(("pip", "python")) and "|" not in match.group(1):
                lines.append(match.group(1))
    return lines


def _resolve(words: list[str]) -> tuple[Any, list[str]]:
    command: Any = typer.main.get_command(app)
    rest = list(words)
    while rest and not rest[0].startswith("-"):
        sub = command.get_command(None, rest[0]) if hasattr(command, "get_command") else None
        if sub is None:
            break
        command, rest = sub, rest[1:]
    return command, rest


@pytest.mark.parametrize("line", _command_lines())
def test_readme_command_exists(line: str) -> None:
    words = shlex.split(line.replace("[", "").replace("]", "").replace("|", " "))
    command, rest = _resolve(words)
    known = {opt for p in command.params for opt in [*p.opts, *p.secondary_opts]} | {"--help"}
    if "--" in rest:
        rest = rest[:rest.index("--")]
    for word in rest:
        if word.startswith("--"):
            assert word.split("=")[0] in known, f"{line!r}: {word} is not an option of {command.name}"


def test_readme_has_command_lines() -> None:
    assert len(_command_lines()) >= 15

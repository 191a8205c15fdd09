"""Every ``agentworld …`` command in the shell blocks of the README and the docs pages parses against the CLI.

Why: recipes (serving, evaluation, training) are copied by users verbatim; an option renamed or
removed in the code must fail here, not on a user's GPU machine after the model has loaded. Each
command is resolved to its sub-command, each ``--option`` must be one that command accepts, and a
command without placeholders (``$VAR``, ``…``) must parse completely, values and required options
included (click's own parser, nothing is run).
"""

from __future__ import annotations

import importlib
import re
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import typer

from agentworld.cli import app
from agentworld.cli_click import ClickException, Command, Context
from agentworld.domains.base import register_domain, unregister_domain

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
"""The README and every docs page (the generated references are not files, and hold no shell blocks)."""
SHELL_BLOCK = re.compile(r"^```(?:bash|sh|shell|console)\n(.*?)^```", re.M | re.S)
COMMAND = re.compile(r"^(?:\$ )?(?:[A-Z_]+=\S+ )*(?:\.venv/bin/)?agentworld\s")
PLACEHOLDER = re.compile(r"\$|\.\.\.|…|<[a-z]|\[-")
DOMAIN_PACKAGES = re.compile(r"^export (?:.* )?AGENTWORLD_DOMAIN_PACKAGES=(\S+)", re.M)
"""A block that exports domain packages (docs/adding-a-domain.md): its commands run with them registered."""


def readme_commands(page: Path = README) -> list[tuple[int, str]]:
    """``(line number, command)`` for each agentworld command in a shell block (continuations joined)."""
    text = page.read_text(encoding="utf-8")
    found: list[tuple[int, str]] = []
    for block in SHELL_BLOCK.finditer(text):
        first_line = text.count("\n", 0, block.start(1)) + 1
        packages = DOMAIN_PACKAGES.search(block.group(1))
        env = f"AGENTWORLD_DOMAIN_PACKAGES={packages.group(1)} " if packages else ""
        lines = block.group(1).split("\n")
        i = 0
        while i < len(lines):
            start, command = i, lines[i]
            while command.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command.rstrip()[:-1] + " " + lines[i].strip()
            i += 1
            if COMMAND.match(command.strip()):
                found.append((first_line + start, env + command.strip().removeprefix("$ ")))
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


COMMANDS = [(f"{page.relative_to(ROOT)}:{n}", command)
            for page in PAGES for n, command in readme_commands(page)]


def test_the_readme_has_commands_to_check() -> None:
    assert len(readme_commands()) >= 8


def test_the_docs_have_commands_to_check() -> None:
    pages = {where.rsplit(":", 1)[0] for where, _ in COMMANDS}
    assert len(COMMANDS) >= 90 and {"docs/guides/evaluate.md", "docs/guides/serve.md"} <= pages


@contextmanager
def _domain_packages(command: str) -> Iterator[None]:
    """Register the plugins of the domain packages a command names (``AGENTWORLD_DOMAIN_PACKAGES=``),
    as the CLI would in a process with that variable, and unregister them afterwards."""
    found = re.match(r"AGENTWORLD_DOMAIN_PACKAGES=(\S+) ", command)
    names = found.group(1).split(",") if found else []
    plugins = [importlib.import_module(name).PLUGIN for name in names]
    for plugin in plugins:
        register_domain(plugin)
    try:
        yield
    finally:
        for plugin in plugins:
            unregister_domain(plugin.name)


@pytest.mark.parametrize(("line", "command"), COMMANDS, ids=[where for where, _ in COMMANDS])
def test_readme_command_parses(line: str, command: str) -> None:
    with _domain_packages(command):
        _check_parses(line, command)


def _check_parses(line: str, command: str) -> None:
    root = typer.main.get_command(app)
    argv = _argv(command)
    ctx = Context(root, info_name="agentworld")
    cmd: Command = root
    path = ["agentworld"]
    while hasattr(cmd, "get_command") and argv and not argv[0].startswith("-") and argv[0] != "--":
        sub = cmd.get_command(ctx, argv[0])
        assert sub is not None, f"{line}: `{' '.join(path)}` has no sub-command {argv[0]!r}: {command}"
        path.append(argv.pop(0))
        cmd = sub
        ctx = Context(cmd, info_name=path[-1], parent=ctx)
    runs_itself = not hasattr(cmd, "get_command") or getattr(cmd, "invoke_without_command", False)
    assert runs_itself, f"{line}: {' '.join(path)} needs a sub-command: {command}"
    known = {opt for param in cmd.params for opt in (*param.opts, *param.secondary_opts)} | {"--help"}
    own = argv[:argv.index("--")] if "--" in argv else argv  # after --: the wrapped program's own argv
    unknown = [word.split("=")[0] for word in own
               if word.startswith("--") and word.split("=")[0] not in known]
    assert not unknown, f"{line}: {' '.join(path)} has no option {unknown}: {command}"
    if PLACEHOLDER.search(command) or "--help" in argv:
        return
    try:
        cmd.make_context(path[-1], list(argv), parent=ctx.parent)
    except ClickException as exc:
        pytest.fail(f"{line}: {' '.join(path)} does not parse ({exc.format_message()}): {command}")
